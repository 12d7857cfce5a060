// The request states the console acts on, as the server defines them (request_pages.ACTIONS, from
// reconcile's State): rendered once into every page (base.html), read here, defined nowhere else.

const states = JSON.parse(document.getElementById("request-states").textContent);

export const LIVE = new Set(states.releasable); // it holds capacity: Release is offered
export const CANCELLABLE = new Set(states.cancellable); // not finished: Cancel is offered
