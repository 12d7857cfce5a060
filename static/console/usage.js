// The pool cards' usage bars and counts, live from pool.updated (api.md §3: the pool's live
// state, as GET /api/v1/pools gives it). Numbers are shown as the API writes them.

import { api } from "./api.js";

function percent(used, total) {
  if (!total) return used ? 100 : 0;
  return Math.min(100, Math.round((100 * used) / total));
}

export function showPool(board, state) {
  const card = [...board.querySelectorAll("[data-pool-card]")].find((c) => c.dataset.pool === state.name);
  if (!card) return;
  for (const row of card.querySelectorAll(".bar-row[data-key]")) {
    const key = row.dataset.key;
    const used = state.used?.[key] ?? 0;
    const total = state.capacity?.[key] ?? 0;
    const over = state.overcommitted?.[key];
    row.querySelector("[data-used]").textContent = String(used);
    row.querySelector("[data-total]").textContent = String(total);
    row.querySelector("[data-over]").textContent = over ? ` · over by ${over}` : "";
    const free = row.querySelector("[data-free]"); // the queue pages show what is free beside the bar
    if (free) free.textContent = String(state.free?.[key] ?? 0);
    row.classList.toggle("is-over", Boolean(over));
    row.querySelector(".bar-fill").style.width = `${percent(used, total)}%`;
    const meter = row.querySelector('[role="meter"]');
    meter.setAttribute("aria-valuenow", String(used));
    meter.setAttribute("aria-valuetext", `${used} of ${total} ${key} in use`);
  }
  for (const [field, value] of [["running", state.running], ["pending", state.pending]]) {
    const shown = card.querySelector(`[data-${field}]`);
    if (shown && value !== undefined) shown.textContent = String(value);
  }
}

// After a resync (events were missed) read every pool again.
export async function refreshPools(board) {
  const result = await api("GET", "/pools");
  if (result.ok) for (const state of result.data) showPool(board, state);
}
