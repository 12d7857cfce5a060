// The policies page (/policies/): each card follows policy.updated, whose data is the policy's
// GET /api/v1/policies entry. Its figures and bars change in place, as the API writes the
// numbers; when its rows or its running requests change, the card is read again from the
// server (/policies/<name>/card/), rendered as the page rendered it. Cards of policies this
// person does not see are not on the page, and their events are let be.

import { on, startStream } from "./shared/stream.js";
import { flash } from "./shared/flash.js";

const page = JSON.parse(document.getElementById("page-data").textContent);
const list = document.getElementById("policies");
const reading = new Map(); // policy → a read of its card under way (true: read again after it)

function card(name) {
  return [...(list?.querySelectorAll("[data-policy-usage]") ?? [])].find((c) => c.dataset.policy === name);
}

function percent(part, scale) {
  return scale ? Math.round((10000 * part) / scale) / 100 : 0;
}

const shown = (number) => (number === null || number === undefined ? "—" : String(number));

// The bar's scale as the server's policy_pages.usage_bar takes it: the limit, else the capacity
// of the scope (data-capacity), never below the largest figure.
function showScope(row, scope) {
  const bound = scope.limit ?? Number(row.dataset.capacity ?? 0);
  const scale = Math.max(bound, scope.usage, scope.reserved ?? 0);
  const within = percent(scope.usage - scope.borrowed, scale);
  const beyond = percent(scope.borrowed, scale);
  row.querySelector(".within").style.width = `${within}%`;
  Object.assign(row.querySelector(".beyond").style, { left: `${within}%`, width: `${beyond}%` });
  const mark = row.querySelector(".reserved-mark");
  mark.hidden = scope.reserved === null;
  mark.style.left = `${percent(scope.reserved ?? 0, scale)}%`;
  const meter = row.querySelector('[role="meter"]');
  meter.setAttribute("aria-valuenow", String(Math.round(within + beyond)));
  meter.setAttribute("aria-valuetext", `${shown(scope.usage)} ${scope.key} in use, ${shown(scope.borrowed)} borrowed; `
    + `reserved ${scope.reserved ?? "none"}, limit ${scope.limit ?? "none"}`);
  row.querySelector('[data-figure="usage"] b').textContent = shown(scope.usage);
  for (const figure of ["reserved", "limit", "borrowed", "pending", "running"]) {
    row.querySelector(`[data-figure="${figure}"]`).textContent = shown(scope[figure]);
  }
  row.classList.toggle("is-over", scope.limit !== null && scope.usage > scope.limit);
}

async function reread(name) {
  if (reading.has(name)) { reading.set(name, true); return; }
  reading.set(name, false);
  const response = await fetch(`/policies/${encodeURIComponent(name)}/card/`, { credentials: "same-origin" });
  const again = reading.get(name);
  reading.delete(name);
  const found = card(name);
  if (response.ok && found) {
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html").querySelector("[data-policy-usage]");
    if (fresh) { found.replaceWith(fresh); flash(fresh); }
  }
  if (again) reread(name);
}

function show(policy) {
  const found = card(policy.name);
  if (!found) return;
  const rows = policy.scopes.map((s) => `${s.scope}/${s.key} `).join("");
  if (rows !== found.dataset.rows || String(policy.running) !== found.dataset.running) {
    reread(policy.name);
    return;
  }
  found.querySelector("[data-policy-running]").textContent = String(policy.running);
  found.querySelector("[data-policy-pending]").textContent = String(policy.pending);
  for (const scope of policy.scopes) {
    const row = [...found.querySelectorAll("tr[data-scope]")]
      .find((r) => r.dataset.scope === scope.scope && r.dataset.key === scope.key);
    if (row) showScope(row, scope);
  }
  flash(found);
}

on("policy.updated", show);
on("resync", () => { for (const found of list?.querySelectorAll("[data-policy-usage]") ?? []) reread(found.dataset.policy); });
startStream(document.querySelector("[data-live]"), page.seq);
