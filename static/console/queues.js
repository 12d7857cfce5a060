// The queue page of one pool (/queues/<pool>/): the tables "Running on <pool>" and "Pending for
// <pool>" kept as the server has them, from the event stream and the REST API like any client:
// - request.updated (one's own requests; admins: all) moves or changes its row at once;
// - pool.updated re-reads the rows shown (GET /pools/{name}/queue and /running): a new position
//   alone sends no event (docs/events.md). Re-reads are coalesced: one in flight, at most one more.
// Rows are keyed by id and moved only when the service order really changes, so a grant ahead
// renumbers positions in place; a row that is new or changed (not only its position) flashes.
// The cells are those of templates/console/partials/queue_row.html, made from the same object.

import { api } from "./api.js";
import { on, startStream } from "./stream.js";
import { flash } from "./flash.js";
import { refreshPools, showPool } from "./usage.js";
import "./countdown.js";

const page = JSON.parse(document.getElementById("page-data").textContent);
const PRIVATE = "Only its owner, their team and administrators see this";
const STATE_TEXT = { pending: "queued" };
const HIDDEN_KEYS = new Set(["step_run"]); // every request has step_run: 1
const LIVE = new Set(["allocated", "preempting"]);
const API_PAGE = 1000; // the most the API gives in one page
const GATHER_MS = 25; // events of one relay batch arrive together: one re-read for them all
const PACE = 2; // after a re-read whose server took D ms the next starts no sooner than PACE × D
                // later: a busy server slows every page's reads down instead of queueing them
                // (decision 53). D is the server's part (decision 67), not the page's own delay.
const WHY_EVERY_MS = 2000; // open "Why it waits" panels are read again at most this often
const touched = new Map(); // request id → when an event last changed its row (performance.now())

function resourcesText(resources) {
  // As the server's resources filter: gpu first, then by name, " · " between.
  const order = ([a], [b]) => (a !== "gpu") - (b !== "gpu") || (a < b ? -1 : a > b ? 1 : 0);
  return Object.entries(resources ?? {}).filter(([key]) => !HIDDEN_KEYS.has(key)).sort(order)
    .map(([key, amount]) => `${amount} ${key}`).join(" · ");
}

function element(tag, attributes = {}, ...children) {
  const made = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, value);
  made.append(...children);
  return made;
}

function privateMark() {
  return element("span", { class: "private", title: PRIVATE }, "private");
}

function isHidden(data) { return !("owner" in data); }

// What each cell shows, as a string per cell: a cell is made again only when its string changes.
function signature(data, table) {
  const hidden = isHidden(data);
  const linked = page.admin || data.owner === page.me;
  const found = {
    id: `${linked}|${table === "pending" || data.state === "preempting"}`,
    name: hidden ? "" : data.name, owner: hidden ? "" : data.owner, policy: data.policy, profile: data.profile,
    resources: resourcesText(data.resources), state: `${data.state}|${data.grace_ends_at ?? ""}`,
  };
  if (table === "pending") {
    found.position = String(data.position ?? "");
    found.reason = hidden ? "\u0000" : (data.message || data.reason);
  }
  return found;
}

function idCell(data, table) {
  const cell = element("th", { scope: "row", class: "id-cell" });
  if (table === "pending" || data.state === "preempting") {
    const label = table === "pending" ? `Why request ${data.id} waits` : `Why request ${data.id} is preempted`;
    const button = element("button", { type: "button", class: "disclosure", "aria-expanded": "false",
      "aria-controls": `why-${data.id}`, "aria-label": label });
    button.innerHTML = '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M6 4l4 4-4 4"/></svg>';
    cell.append(button, " ");
  }
  const linked = page.admin || data.owner === page.me;
  cell.append(linked ? element("a", { href: `/requests/${data.id}/` }, `#${data.id}`) : element("span", {}, `#${data.id}`));
  return cell;
}

function stateCell(data) {
  const cell = element("td", { "data-cell": "state" },
    element("span", { class: `state state-${data.state}` }, STATE_TEXT[data.state] ?? data.state));
  if (data.grace_ends_at) {
    cell.append(" ", element("span", { class: "countdown", title: `The grace ends at ${data.grace_ends_at}` }, "grace ends ",
      element("time", { "data-countdown": "", datetime: data.grace_ends_at }, "…")));
  }
  return cell;
}

function makeCell(name, data, table) {
  const hidden = isHidden(data);
  switch (name) {
    case "id": return idCell(data, table);
    case "name": return element("td", { "data-cell": "name" }, hidden ? privateMark() : (data.name || "—"));
    case "owner": return element("td", { "data-cell": "owner" }, hidden ? privateMark() : data.owner);
    case "resources": return element("td", { "data-cell": "resources", class: "resources" }, resourcesText(data.resources));
    case "state": return stateCell(data);
    case "position": return element("td", { "data-cell": "position", class: "num" }, String(data.position ?? "—"));
    case "reason": return element("td", { "data-cell": "reason", class: "reason" },
      hidden ? privateMark() : (data.message || data.reason));
    default: return element("td", { "data-cell": name }, data[name]);
  }
}

class Table {
  constructor(kind) {
    this.kind = kind;
    this.table = document.querySelector(`table[data-table="${kind}"]`);
    this.tbody = this.table.tBodies[0];
    this.limit = page.page_rows;
    this.count = page[kind];
    this.rows = new Map(); // id → tr
    for (const data of page.rows[kind]) {
      const tr = this.tbody.querySelector(`tr[data-id="${data.id}"]`);
      tr.signature = signature(data, kind);
      this.rows.set(data.id, tr);
    }
    this.more = document.querySelector(`[data-more="${kind}"]`);
    this.more.addEventListener("click", () => { this.limit += page.page_rows; reread(); });
  }

  get path() {
    return `/pools/${encodeURIComponent(page.pool)}/${this.kind === "pending" ? "queue" : "running"}`;
  }

  // Whether a re-read can change this table: an admin's stream has every request.updated, so
  // its running rows are exact already unless rows left the window that the next ones fill.
  get stale() {
    if (this.kind === "pending" || !page.admin) return true;
    return this.rows.size < Math.min(this.limit, this.count);
  }

  // The rows shown, read again: { count, items } or null when the server did not answer.
  async read() {
    const items = [];
    let count = 0;
    do {
      const limit = Math.min(API_PAGE, this.limit - items.length);
      const result = await api("GET", `${this.path}?limit=${limit}&offset=${items.length}`);
      if (!result.ok) return null;
      count = result.data.count;
      items.push(...result.data.results);
      if (result.data.results.length < limit) break;
    } while (items.length < this.limit);
    return { count, items };
  }

  // The rows as a read begun at ``since`` found them; rows an event changed since keep the event's.
  apply({ count, items }, since) {
    const keep = new Set();
    let previous = null;
    for (const data of items) {
      const later = (touched.get(data.id) ?? -1) > since;
      if (later && !this.rows.has(data.id)) continue; // an event took it out after the read began
      keep.add(data.id);
      const tr = later ? this.rows.get(data.id) : this.put(data);
      this.placeAfter(tr, previous);
      previous = tr;
    }
    for (const id of [...this.rows.keys()]) {
      if (!keep.has(id) && !((touched.get(id) ?? -1) > since)) this.drop(id);
    }
    this.count = count;
    this.showCount();
  }

  // A row made or brought up to date; it flashes unless only its position changed.
  put(data) {
    const wanted = signature(data, this.kind);
    let tr = this.rows.get(data.id);
    if (!tr) {
      tr = element("tr", { "data-id": String(data.id), "data-state": data.state });
      for (const name of Object.keys(wanted)) tr.append(makeCell(name, data, this.kind));
      this.rows.set(data.id, tr);
      flash(tr);
    } else {
      const changed = Object.keys(wanted).filter((name) => tr.signature[name] !== wanted[name]);
      for (const name of changed) {
        const index = Object.keys(wanted).indexOf(name);
        if (name === "position") { // the one cell every re-read changes: its text, not a new cell
          tr.cells[index].firstChild.nodeValue = String(data.position ?? "—");
          continue;
        }
        const expanded = name === "id" && tr.cells[0].querySelector("[aria-expanded='true']");
        tr.replaceChild(makeCell(name, data, this.kind), tr.cells[index]);
        if (expanded) tr.cells[0].querySelector(".disclosure")?.setAttribute("aria-expanded", "true");
      }
      tr.dataset.state = data.state;
      if (changed.some((name) => name !== "position")) flash(tr);
    }
    tr.classList.toggle("is-private", isHidden(data));
    tr.signature = wanted;
    return tr;
  }

  // A row from an event, where service order puts it among the rows shown (not beyond them).
  place(data) {
    if (this.rows.has(data.id)) { this.put(data); return; }
    const shown = [...this.rows.values()];
    let before = null;
    if (this.kind === "pending" && data.position != null) {
      before = shown.find((tr) => { const p = Number(tr.signature.position); return !p || p > data.position; }) ?? null;
    }
    if (!before && this.rows.size >= this.limit) return; // beyond the rows shown
    const tr = this.put(data);
    this.tbody.insertBefore(tr, before);
    this.count += 1;
    this.showCount();
  }

  placeAfter(tr, previous) {
    const after = previous ? (whyRow(previous) ?? previous) : null;
    const reference = after ? after.nextElementSibling : this.tbody.firstElementChild;
    if (reference !== tr) {
      this.tbody.insertBefore(tr, reference);
      const why = whyRow(tr);
      if (why) tr.after(why);
    }
  }

  drop(id) {
    const tr = this.rows.get(id);
    if (!tr) return;
    whyRow(tr)?.remove();
    tr.remove();
    this.rows.delete(id);
  }

  showCount() {
    const shown = this.rows.size;
    const count = Math.max(this.count, shown);
    const text = !count ? "None" : count > shown ? `The first ${shown} of ${count}` : `${count} request${count === 1 ? "" : "s"}`;
    const shownText = document.querySelector(`[data-shown="${this.kind}"]`);
    if (shownText.textContent !== text) shownText.textContent = text;
    document.querySelector(`[data-empty="${this.kind}"]`).hidden = shown > 0;
    this.more.hidden = count <= shown;
  }
}

function whyRow(tr) {
  const next = tr.nextElementSibling;
  return next?.classList.contains("why-row") ? next : null;
}

const tables = { running: new Table("running"), pending: new Table("pending") };
const summary = document.querySelector(".queue-head");

// --- re-reads: one in flight, one more queued behind it at most ----------------------------------

let reading = null;
let again = false;
let gathering = null;
let lastRead = 0; // how long the server took to answer the last re-read (ms)
let lastEnded = 0;
const SERVED = /\/api\/v1\/pools\/[^/]+\/(queue|running)\?/;

// The server's part of a re-read, from Resource Timing (request sent → first byte of the slowest
// answer): a page busy rendering takes its answers late, and pacing by that would slow its reads
// down for time the server never spent. The entries are cleared, so the buffer never fills.
function servedMs(fallback) {
  const entries = performance.getEntriesByType("resource").filter((entry) => SERVED.test(entry.name));
  performance.clearResourceTimings();
  const spent = entries.filter((entry) => entry.responseStart > 0).map((entry) => entry.responseStart - entry.requestStart);
  return spent.length ? Math.min(fallback, Math.max(...spent)) : fallback;
}

export function reread() {
  if (reading || gathering) { again = true; return; }
  gathering = setTimeout(() => {
    gathering = null;
    const since = performance.now();
    reading = Promise.all(Object.values(tables).filter((table) => table.stale).map(async (table) => {
      const found = await table.read();
      if (found) table.apply(found, since);
    })).finally(() => {
      reading = null;
      lastEnded = performance.now();
      lastRead = servedMs(lastEnded - since);
      refreshWhy();
      if (again) { again = false; reread(); }
    });
  }, Math.max(GATHER_MS, PACE * lastRead - (performance.now() - lastEnded)));
}

on("request.updated", (data) => {
  touched.set(data.id, performance.now());
  const pending = data.state === "pending" && data.queue_pool === page.pool;
  const running = LIVE.has(data.state) && data.pool === page.pool;
  for (const [kind, here] of [["pending", pending], ["running", running]]) {
    const table = tables[kind];
    if (here) {
      table.place(data);
    } else if (table.rows.has(data.id)) {
      table.drop(data.id);
      table.count = Math.max(0, table.count - 1);
      table.showCount();
    }
  }
});

on("pool.updated", (state) => {
  if (state.name !== page.pool) return;
  showPool(summary.parentElement, state);
  tables.running.count = state.running;
  tables.pending.count = state.pending;
  reread();
});

on("resync", () => { refreshPools(summary.parentElement); reread(); });

// --- "Why it waits": a disclosure per row, its panel read from the console ----------------------

let whyReadAt = 0;

async function loadWhy(id, holder) {
  const response = await fetch(`/queues/${encodeURIComponent(page.pool)}/why/${id}/`,
    { credentials: "same-origin", headers: { Accept: "text/html" } }).catch(() => null);
  if (response?.ok) holder.innerHTML = await response.text();
  else if (response?.status === 404) holder.innerHTML = '<p class="muted">It has left this pool.</p>';
}

function refreshWhy() {
  if (performance.now() - whyReadAt < WHY_EVERY_MS) return;
  whyReadAt = performance.now();
  for (const row of document.querySelectorAll("tr.why-row")) loadWhy(row.dataset.for, row.querySelector(".why-holder"));
}

function toggleWhy(button) {
  const tr = button.closest("tr");
  const open = button.getAttribute("aria-expanded") === "true";
  button.setAttribute("aria-expanded", String(!open));
  if (open) { whyRow(tr)?.remove(); return; }
  const holder = element("div", { class: "why-holder", "aria-live": "polite" });
  holder.append(document.getElementById("why-loading").content.cloneNode(true));
  const panel = element("tr", { class: "why-row", id: `why-${tr.dataset.id}`, "data-for": tr.dataset.id },
    element("td", { colspan: String(tr.cells.length) }, holder));
  tr.after(panel);
  loadWhy(tr.dataset.id, holder);
}

for (const table of Object.values(tables)) {
  table.tbody.addEventListener("click", (event) => {
    const button = event.target.closest("button.disclosure");
    if (button) toggleWhy(button);
  });
}

startStream(document.querySelector("[data-live]"), page.seq);
