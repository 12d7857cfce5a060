// The pool cards' usage bars and counts, live from pool.updated (api.md §3: the pool's live
// state, as GET /api/v1/pools gives it). Numbers are shown as the API writes them.

import { api } from "./api.js";

// Written only when it differs: the same text written again is still a change to lay out and paint.
function write(element, text) {
  if (element && element.textContent !== text) element.textContent = text;
}

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
    write(row.querySelector("[data-used]"), String(used));
    write(row.querySelector("[data-total]"), String(total));
    write(row.querySelector("[data-over]"), over ? ` · over by ${over}` : "");
    write(row.querySelector("[data-free]"), String(state.free?.[key] ?? 0)); // on the queue pages only
    row.classList.toggle("is-over", Boolean(over));
    const width = `${percent(used, total)}%`;
    const fill = row.querySelector(".bar-fill");
    if (fill.style.width !== width) fill.style.width = width;
    const meter = row.querySelector('[role="meter"]');
    meter.setAttribute("aria-valuenow", String(used));
    meter.setAttribute("aria-valuetext", `${used} of ${total} ${key} in use`);
  }
  for (const [field, value] of [["running", state.running], ["pending", state.pending]]) {
    if (value !== undefined) write(card.querySelector(`[data-${field}]`), String(value));
  }
}

// After a resync (events were missed) read every pool again.
export async function refreshPools(board) {
  const result = await api("GET", "/pools");
  if (result.ok) for (const state of result.data) showPool(board, state);
}
