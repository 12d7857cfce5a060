// Cancel and Release of a request (its owner's or an admin's), from the requests page and a
// request's page: a confirmation, then the REST API (POST /api/v1/requests/{id}/cancel or
// /release). The page then shows the request as the API stored it, or the API's message as an
// alert; nothing shows as done that did not commit.

import { api, problem } from "./api.js";
import { confirmAction } from "./dialogs.js";
import { LIVE } from "./states.js";


function wording(action, id, state) {
  if (action === "release") {
    return { title: `Release request #${id}?`, confirm: "Release", cancel: "Keep it",
             message: ["Release it when its job is done: its capacity goes back to the pool at once.",
                       "A job still running on it should stop first."] };
  }
  return { title: `Cancel request #${id}?`, confirm: "Cancel request", cancel: "Keep it", danger: true,
           message: LIVE.has(state)
             ? ["It stops holding its capacity at once; the job running on it should stop.", "This cannot be undone."]
             : ["It leaves the queue and will not run.", "This cannot be undone."] };
}

// An alert in ``notices`` with the API's words; it replaces the previous one.
export function alertNotice(notices, message) {
  notices.querySelector(".notice.error[data-action-error]")?.remove();
  const notice = Object.assign(document.createElement("p"), { className: "notice error", textContent: message });
  notice.setAttribute("role", "alert");
  notice.dataset.actionError = "";
  notices.append(notice);
}

// Clicks on the Cancel / Release buttons inside ``root``; ``stored(request)`` gets the answer.
export function followActions(root, { notices, stored }) {
  root.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button || !root.contains(button)) return;
    const container = button.closest("[data-actions]");
    const id = Number(container.dataset.request);
    const action = button.dataset.action;
    if (!(await confirmAction(wording(action, id, container.dataset.state)))) return;
    button.disabled = true;
    const result = await api("POST", `/requests/${id}/${action}`);
    button.disabled = false;
    if (!result.ok) {
      alertNotice(notices, `Request #${id} was not ${action === "cancel" ? "cancelled" : "released"}: ${problem(result)}`);
      return;
    }
    notices.querySelector("[data-action-error]")?.remove();
    stored(result.data);
    if (button.hidden) document.getElementById(`request-${id}`)?.focus();
  });
}
