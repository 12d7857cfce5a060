// One request's page (/requests/<id>/): its fields and history follow the stream
// (request.updated for it; pool.updated of the pool it is queued for, which moves positions
// without an event of its own), Cancel / Release through the REST API. New history rows are
// appended as the server renders them (/requests/<id>/history/, history_row.html); nothing above
// them moves.

import { api } from "./shared/api.js";
import { on, startStream } from "./shared/stream.js";
import { alertNotice, followActions } from "./shared/request_actions.js";
import { flash } from "./shared/flash.js";
import { showRequest } from "./shared/request_view.js";
import "./shared/countdown.js"; // a grace that begins while the page is open counts down too

const page = JSON.parse(document.getElementById("page-data").textContent);
const notices = document.getElementById("notices");
const history = document.getElementById("history");
let current = page.request;
let shownChanges = page.changes;
let reading = Promise.resolve();

// Append the changes this page does not show yet (one read at a time, so none comes twice).
function readHistory() {
  reading = reading.then(async () => {
    const response = await fetch(`/requests/${current.id}/history/?after=${shownChanges}`,
      { credentials: "same-origin", headers: { Accept: "text/html" } }).catch(() => null);
    // Signed out meanwhile, the read is redirected to the sign-in page: no rows to append.
    if (!response?.ok || response.redirected) return;
    const rows = new DOMParser().parseFromString(`<table>${await response.text()}</table>`, "text/html").querySelector("tbody[data-count]");
    if (!rows) return;
    for (const tr of [...rows.rows]) {
      const row = document.importNode(tr, true);
      history.append(row);
      flash(row);
    }
    shownChanges = Math.max(shownChanges, Number(rows.dataset.count));
    document.querySelector("[data-history-count]").textContent = String(shownChanges);
    if (shownChanges) document.getElementById("history-empty")?.remove();
  });
  return reading;
}

// "Why it waits" as the queue page's fragment renders it, for a request that waits; hidden
// once it does not (allocated or finished).
// Only the newest read is shown: an older answer arriving late must not replace a newer one.
let whyAsked = 0;

async function readWhy(request) {
  const slot = document.querySelector("[data-why-slot]");
  const asked = ++whyAsked;
  const pool = request.state === "pending" ? request.queue_pool : request.state === "preempting" ? request.pool : null;
  if (!pool) { slot.hidden = true; slot.replaceChildren(); return; }
  const response = await fetch(`/queues/${encodeURIComponent(pool)}/why/${request.id}/`, { credentials: "same-origin" });
  const html = response.ok && !response.redirected ? await response.text() : null;
  if (asked !== whyAsked || html === null) return;
  slot.innerHTML = html;
  slot.hidden = false;
}

// The history gains a row only with a change of state (services.changes.history_entry), so a
// heartbeat or a new position reads nothing more.
function show(request, { history = false } = {}) {
  const moved = request.state !== current.state || request.attempt !== current.attempt;
  current = request;
  for (const element of showRequest(document.getElementById("main"), request)) flash(element);
  if (moved || history) readHistory();
  if (moved || history || request.state === "pending") readWhy(request);
}

async function reread({ history = false } = {}) {
  const result = await api("GET", `/requests/${current.id}`);
  if (result.ok) show(result.data, { history });
  else if (result.status === 404) alertNotice(notices, `Request #${current.id} is gone: ${result.data?.detail ?? "not found"}`);
}

followActions(document.querySelector(".page-actions"), { notices, stored: show });
on("request.updated", (request) => { if (request.id === current.id) show(request); });
on("pool.updated", (pool) => { if (current.state === "pending" && pool.name === current.queue_pool) reread(); });
on("resync", () => reread({ history: true }));
startStream(document.querySelector("[data-live]"), page.seq);
