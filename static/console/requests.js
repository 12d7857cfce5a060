// The requests page (/requests/): Cancel / Release on live rows, and the rows shown kept as the
// stream says (request.updated: the owner's and admins' events). A row changes in place and is
// briefly marked; rows never move. After a resync the rows are read again from the server.

import { on, startStream } from "./shared/stream.js";
import { followActions } from "./shared/request_actions.js";
import { flash } from "./shared/flash.js";
import { showRequest } from "./shared/request_view.js";
import { refreshTimes } from "./shared/times.js";

const page = JSON.parse(document.getElementById("page-data").textContent);
const notices = document.getElementById("notices");
const body = document.querySelector("table.requests tbody");

function row(id) {
  return body?.querySelector(`tr[data-request="${id}"]`);
}

function show(request) {
  const found = row(request.id);
  if (found && showRequest(found, request).length) flash(found);
  if (!found && page.newest && request.id > page.top) announce(request.id);
}

// A request newer than the page's rows (the first page, unfiltered): said, not inserted, so the
// rows under the reader's eyes stay where they are.
function announce(id) {
  let notice = document.getElementById("newer-notice");
  if (!notice) {
    notice = Object.assign(document.createElement("p"), { className: "notice", id: "newer-notice" });
    const reload = Object.assign(document.createElement("button"), { type: "button", className: "button small", textContent: "Show them" });
    reload.addEventListener("click", () => location.reload());
    notice.append(document.createElement("span"), reload);
    notices.append(notice);
  }
  page.newer = new Set([...(page.newer ?? []), id]);
  const count = page.newer.size;
  notice.firstChild.textContent = `${count} newer request${count === 1 ? "" : "s"} since this page was loaded.`;
}

// The shown rows as the server renders them now (after events were missed).
async function reread() {
  if (!body) return;
  const response = await fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) return;
  const html = new DOMParser().parseFromString(await response.text(), "text/html");
  const fresh = html.querySelector("table.requests tbody");
  if (fresh) body.replaceChildren(...fresh.children);
  refreshTimes(body);
}

if (body) followActions(body, { notices, stored: show });
on("request.updated", show);
on("resync", reread);
startStream(document.querySelector("[data-live]"), page.seq);
