// A request's fields in a page (a row of /requests/, the fields of /requests/<id>/): every
// element marked data-field is written from the request object of the REST API or of a
// request.updated event, as the server's partials render them (request_state.html,
// request_where.html, request.html), in place, so nothing moves when an update arrives.

import { CANCELLABLE, LIVE } from "./states.js";
import { startsElement } from "./starts.js";
import { timeElement } from "./times.js";

function text(value, empty = "—") {
  if (value === null || value === undefined || value === "") {
    return Object.assign(document.createElement("span"), { className: "muted", textContent: empty });
  }
  return document.createTextNode(String(value));
}

// Pool name → what people read (decision 121), as the requests pages render it beside their data.
const POOL_NAMES = JSON.parse(document.getElementById("pool-names")?.textContent ?? "{}");
const poolName = (name) => POOL_NAMES[name] ?? name;

function where(request) {
  if (request.pool) return text(poolName(request.pool));
  if (request.state === "pending" && request.queue_pool) {
    return Object.assign(document.createElement("span"), { className: "muted", textContent: `queued for ${poolName(request.queue_pool)}` });
  }
  return text(null);
}

function preemptor(id) {
  if (!id) return text(null);
  return Object.assign(document.createElement("a"), { href: `/requests/${id}/`, textContent: `#${id}` });
}

// The lease as the server's request_pages.lease_of reads it: the last heartbeat is the expiry
// less the lease's length, when that is later than the grant.
function lease(request) {
  if (!LIVE.has(request.state) || !request.lease_expires_at) return { expires: null, renewed: null };
  const renewed = new Date(new Date(request.lease_expires_at) - request.lease_seconds * 1000);
  const later = !request.allocated_at || renewed > new Date(request.allocated_at);
  return { expires: request.lease_expires_at, renewed: later ? renewed.toISOString() : null };
}

function fill(element, node) {
  element.replaceChildren(node);
}

const WRITERS = {
  state: (element, r) => {
    element.textContent = r.state;
    if (element.classList.contains("state-chip")) element.className = `state-chip state-${r.state}`;
  },
  reason: (element, r) => { element.textContent = r.reason; },
  message: (element, r) => fill(element, text(r.message)),
  where: (element, r) => fill(element, where(r)),
  "position-value": (element, r) => fill(element, text(r.state === "pending" ? r.position : null)),
  eta: (element, r) => fill(element, startsElement(r) ?? text(null)),
  attempt: (element, r) => { element.textContent = String(r.attempt); },
  preempted_by: (element, r) => fill(element, preemptor(r.preempted_by)),
  allocated_at: (element, r) => fill(element, timeElement(r.allocated_at)),
  finished_at: (element, r) => fill(element, timeElement(r.finished_at)),
  lease_expires_at: (element, r) => fill(element, timeElement(lease(r).expires)),
  heartbeat: (element, r) => {
    const { expires, renewed } = lease(r);
    fill(element, expires ? timeElement(renewed, "none yet") : text(null));
  },
};

// Write ``request`` into every data-field of ``root``; the elements whose text changed.
export function showRequest(root, request) {
  const changed = [];
  for (const element of root.querySelectorAll("[data-field]")) {
    const before = element.textContent;
    WRITERS[element.dataset.field]?.(element, request);
    if (element.textContent !== before) changed.push(element);
  }
  for (const actions of root.querySelectorAll("[data-actions]")) showActions(actions, request);
  for (const help of root.querySelectorAll("[data-actions-help]")) help.hidden = !LIVE.has(request.state);
  return changed;
}

function showActions(container, request) {
  container.dataset.state = request.state;
  container.querySelector('[data-action="cancel"]').hidden = !CANCELLABLE.has(request.state);
  container.querySelector('[data-action="release"]').hidden = !LIVE.has(request.state);
}
