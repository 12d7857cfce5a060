// The queue page of one pool (/queues/<pool>/): the tables "Running on <pool>" and "Pending for
// <pool>" kept as the server has them. Whatever may change a table (this pool's pool.updated — a
// new position alone sends no event of its own, docs/events.md —, a request.updated that can
// change it, a resync) reads that table's rows again, as the server renders them
// (/queues/<pool>/rows/<table>/, the partial queue_row.html the page came with): a row has one
// markup however it arrived (decision 122). A request.updated that cannot change what the page
// shows reads nothing (``touches``). Re-reads are coalesced: one in flight, at most one more.
// Rows are keyed by id and moved only when the service order really changes, so a grant ahead
// renumbers positions in place; a row that is new or changed (not only its position) flashes.

import { on, startStream } from "./shared/stream.js";
import { flash } from "./shared/flash.js";
import { LIVE } from "./shared/states.js";
import { refreshPools, showPool } from "./shared/usage.js";
import "./shared/countdown.js";

const page = JSON.parse(document.getElementById("page-data").textContent);
const GATHER_MS = 25; // events of one relay batch arrive together: one re-read for them all
const PACE = 2; // after a re-read whose server took D ms the next starts no sooner than PACE × D
                // later: a busy server slows every page's reads down instead of queueing them
                // (decision 53). D is the server's part (decision 68), not the page's own delay.
const WHY_EVERY_MS = 2000; // open "Why it waits" panels are read again at most this often

// What a cell says, less what changes without news: its countdown's ticking text, whether its
// "Why it waits" is open.
function news(cell) {
  const copy = cell.cloneNode(true);
  for (const time of copy.querySelectorAll("time[data-countdown]")) time.replaceChildren();
  copy.querySelector(".disclosure")?.removeAttribute("aria-expanded");
  return copy.innerHTML;
}

function whyRow(tr) {
  const next = tr.nextElementSibling;
  return next?.classList.contains("why-row") ? next : null;
}

class Table {
  constructor(kind) {
    this.kind = kind;
    this.tbody = document.querySelector(`table[data-table="${kind}"]`).tBodies[0];
    this.limit = page.page_rows;
    this.count = page[kind];
    this.more = document.querySelector(`[data-more="${kind}"]`);
    this.more.addEventListener("click", () => { this.limit += page.page_rows; reread([kind]); });
  }

  // The rows shown, as the server renders them now: a <tbody data-count>, or null.
  async read() {
    const path = `/queues/${encodeURIComponent(page.pool)}/rows/${this.kind}/?limit=${this.limit}`;
    const response = await fetch(path, { credentials: "same-origin", headers: { Accept: "text/html" } }).catch(() => null);
    if (!response?.ok || response.redirected) return null; // redirected: signed out meanwhile
    return new DOMParser().parseFromString(`<table>${await response.text()}</table>`, "text/html").querySelector("tbody[data-count]");
  }

  apply(fresh) {
    const shown = new Map([...this.tbody.querySelectorAll(":scope > tr[data-id]")].map((tr) => [tr.dataset.id, tr]));
    const wanted = new Set([...fresh.rows].map((tr) => tr.dataset.id));
    for (const [id, gone] of shown) if (!wanted.has(id)) { whyRow(gone)?.remove(); gone.remove(); }
    let previous = null; // the rows that stay stay where they are unless the order really changed
    for (const tr of [...fresh.rows]) {
      const current = shown.get(tr.dataset.id);
      const kept = current ? this.update(current, tr) : this.made(tr);
      this.placeAfter(kept, previous);
      previous = kept;
    }
    this.count = Number(fresh.dataset.count);
    this.showCount();
  }

  made(tr) {
    const row = document.importNode(tr, true);
    flash(row);
    return row;
  }

  // The row brought up to date in place, cell by cell as the server's row has them: a position
  // is only renumbered; a row whose other cells changed flashes.
  update(current, tr) {
    if (current.cells.length !== tr.cells.length) return this.replaced(current, tr);
    let changed = false;
    [...tr.cells].forEach((cell, i) => {
      const mine = current.cells[i];
      if (cell.dataset.cell === "position") {
        if (mine.textContent !== cell.textContent) mine.textContent = cell.textContent;
      } else if (news(mine) !== news(cell)) {
        const open = mine.querySelector(".disclosure")?.getAttribute("aria-expanded") === "true";
        const made = document.importNode(cell, true);
        mine.replaceWith(made);
        if (open && made.querySelector(".disclosure")) made.querySelector(".disclosure").setAttribute("aria-expanded", "true");
        else if (open) whyRow(current)?.remove();
        changed = true;
      }
    });
    current.dataset.state = tr.dataset.state;
    current.dataset.fields = tr.dataset.fields;
    current.classList.toggle("is-private", tr.classList.contains("is-private"));
    if (changed) flash(current);
    return current;
  }

  replaced(current, tr) {
    const row = this.made(tr);
    whyRow(current)?.remove();
    current.replaceWith(row);
    return row;
  }

  placeAfter(tr, previous) {
    const after = previous ? (whyRow(previous) ?? previous) : null;
    const reference = after ? after.nextElementSibling : this.tbody.firstElementChild;
    if (reference !== tr) {
      const why = tr.isConnected ? whyRow(tr) : null;
      this.tbody.insertBefore(tr, reference);
      if (why) tr.after(why);
    }
  }

  showCount() {
    const shown = this.tbody.querySelectorAll(":scope > tr[data-id]").length;
    const count = Math.max(this.count, shown);
    const text = !count ? "None" : count > shown ? `The first ${shown} of ${count}` : `${count} request${count === 1 ? "" : "s"}`;
    const shownText = document.querySelector(`[data-shown="${this.kind}"]`);
    if (shownText.textContent !== text) shownText.textContent = text;
    document.querySelector(`[data-empty="${this.kind}"]`).hidden = shown > 0;
    this.more.hidden = count <= shown;
  }
}

const tables = { running: new Table("running"), pending: new Table("pending") };
const summary = document.querySelector(".queue-head");

// --- re-reads: one in flight, one more queued behind it at most ----------------------------------

let reading = null;
let again = false;
let gathering = null;
let lastRead = 0; // how long the server took to answer the last re-read (ms)
let lastEnded = 0;
const due = new Set(); // the tables the next re-read reads
const SERVED = /\/queues\/[^/]+\/rows\//;

// The server's part of a re-read, from Resource Timing (request sent → first byte of the slowest
// answer): a page busy rendering takes its answers late, and pacing by that would slow its reads
// down for time the server never spent. The entries are cleared, so the buffer never fills.
function servedMs(fallback) {
  const entries = performance.getEntriesByType("resource").filter((entry) => SERVED.test(entry.name));
  performance.clearResourceTimings();
  const spent = entries.filter((entry) => entry.responseStart > 0).map((entry) => entry.responseStart - entry.requestStart);
  return spent.length ? Math.min(fallback, Math.max(...spent)) : fallback;
}

export function reread(kinds = Object.keys(tables)) {
  for (const kind of kinds) due.add(kind);
  if (!due.size) return;
  if (reading || gathering) { again = true; return; }
  gathering = setTimeout(() => {
    gathering = null;
    const since = performance.now();
    const reads = [...due].map((kind) => tables[kind]);
    due.clear();
    reading = Promise.all(reads.map(async (table) => {
      const fresh = await table.read();
      if (fresh) table.apply(fresh);
    })).finally(() => {
      reading = null;
      lastEnded = performance.now();
      lastRead = servedMs(lastEnded - since);
      refreshWhy();
      if (again) { again = false; reread([]); }
    });
  }, Math.max(GATHER_MS, PACE * lastRead - (performance.now() - lastEnded)));
}

// The table a request belongs in by this request object (a pending one is listed on every pool
// of its profile, decision 119; a running one on its own), or null.
function tableOf(data) {
  if (data.state === "pending") return page.profiles.includes(data.profile) ? "pending" : null;
  return LIVE.has(data.state) && data.pool === page.pool ? "running" : null;
}

// The tables a request.updated can change. A row shown changes only when a field it shows
// changed (the server lists them in its data-fields, queues.ROW_FIELDS): then its table and the
// one it moves to. A live request not shown is beyond the running window (a heartbeat or a
// preemption there changes nothing shown) or newly granted — here, or elsewhere out of this
// pending table — which its pass announces with this pool's pool.updated (docs/events.md,
// decision 119). Any other may enter the pending table, or have left a table beyond its window
// by a cancel or a release: its table's count. Decision 147.
function touches(data) {
  const to = tableOf(data);
  for (const [from, table] of Object.entries(tables)) {
    const tr = table.tbody.querySelector(`:scope > tr[data-id="${data.id}"]`);
    if (!tr) continue;
    const shown = JSON.parse(tr.dataset.fields);
    const changed = Object.entries(shown).some(([key, value]) => JSON.stringify(data[key] ?? null) !== JSON.stringify(value));
    return changed ? [from, to].filter(Boolean) : [];
  }
  if (LIVE.has(data.state)) return [];
  if (to) return [to];
  return [page.profiles.includes(data.profile) && "pending", data.pool === page.pool && "running"].filter(Boolean);
}

on("request.updated", (data) => {
  const kinds = touches(data);
  if (kinds.length) reread(kinds);
});

on("pool.updated", (state) => {
  if (state.name !== page.pool) return;
  showPool(summary.parentElement, state);
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
  const holder = Object.assign(document.createElement("div"), { className: "why-holder" });
  holder.setAttribute("aria-live", "polite");
  holder.append(document.getElementById("why-loading").content.cloneNode(true));
  const cell = Object.assign(document.createElement("td"), { colSpan: tr.cells.length });
  cell.append(holder);
  const panel = Object.assign(document.createElement("tr"), { className: "why-row", id: `why-${tr.dataset.id}` });
  panel.dataset.for = tr.dataset.id;
  panel.append(cell);
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
