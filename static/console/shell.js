// Every page's shell: the management switch (role switch) and, while management is off, the
// banner that says who turned it off and when. Admins flip the switch after confirming, through
// PUT /api/v1/management; others only see it. Pages with a stream keep both current.

import { api, problem } from "./shared/api.js";
import { confirmAction } from "./shared/dialogs.js";
import { on } from "./shared/stream.js";
import { timeElement } from "./shared/times.js";

const button = document.getElementById("management-switch");
const banner = document.getElementById("management-banner");

// Named as the server names them, whether the change came from this page or the stream: the
// stream's event for this page's own flip may arrive after the answer.
function show(enabled, by = banner.dataset.me, at = new Date().toISOString()) {
  button.setAttribute("aria-checked", String(enabled));
  button.querySelector("[data-switch-state]").textContent = enabled ? "on" : "off";
  banner.hidden = enabled;
  if (!enabled) banner.querySelector("[data-banner-who]").replaceChildren(`Turned off by ${by} `, timeElement(at), ".");
}

async function flip() {
  if (button.getAttribute("aria-disabled") === "true") return;
  const enabled = button.getAttribute("aria-checked") === "true";
  const confirmed = await confirmAction(enabled
    ? { title: "Disable resource management?", confirm: "Disable", danger: true,
        message: ["The reconciler stops granting and preempting until it is enabled again.",
                  "Running requests keep their allocations; new ones wait."] }
    : { title: "Enable resource management?", confirm: "Enable",
        message: "The reconciler grants and preempts again, starting with the requests that waited." });
  if (!confirmed) return;
  const result = await api("PUT", "/management", { enabled: !enabled });
  if (result.ok) show(result.data.enabled);  // by this user, now
  else await confirmAction({ title: "The switch did not move", message: problem(result), confirm: "OK" });
}

if (button) {
  button.addEventListener("click", flip);
  on("management.changed", (data) => show(Boolean(data.enabled), data.by ?? "an administrator", data.at ?? undefined));
}
