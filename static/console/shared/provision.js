// Preview impact and Provision: the preview of the saved draft (rendered by the server from the
// same service as POST /api/v1/config/draft/preview), then POST /config/draft/provision with the
// comment. A stale draft (409) shows what changed since it was made and asks before provisioning.

import { api, fragment, problem } from "./api.js";
import { showDialog } from "./dialogs.js";

const LOADING = '<p class="muted">Computing what provisioning would do…</p>';

// The preview scrolls inside its dialog; while part of it is out of sight, a line says so.
function cueMore(dialog) {
  const body = dialog.querySelector("[data-preview]");
  const cue = dialog.querySelector("[data-more]");
  const update = () => { cue.hidden = body.scrollTop + body.clientHeight >= body.scrollHeight - 4; };
  body.onscroll = update;
  return update;
}

async function fill(dialog) {
  const body = dialog.querySelector("[data-preview]");
  const update = cueMore(dialog);
  body.innerHTML = LOADING;
  try {
    body.innerHTML = await fragment("/editor/preview/");
  } catch (error) {
    body.textContent = `The preview failed: ${error.message}`;
  }
  body.scrollTop = 0;
  update();
}

export async function preview() {
  const dialog = document.getElementById("preview-dialog");
  const closed = showDialog(dialog);
  await fill(dialog);
  await closed;
}

function showStale(dialog, stale) {
  const panel = dialog.querySelector("[data-stale]");
  const heading = document.createElement("p");
  heading.innerHTML = "<strong></strong>";
  heading.firstChild.textContent = `This draft was made from version ${stale.base_version}, but version `
    + `${stale.live_version} is live now.`;
  heading.append(" Provisioning the draft replaces it; this is what changed in between:");
  const changes = document.createElement("ul");
  changes.append(...stale.changes.map((change) => Object.assign(document.createElement("li"), { textContent: change.text })));
  if (!stale.changes.length) changes.append(Object.assign(document.createElement("li"), { textContent: "nothing but the version number" }));
  panel.replaceChildren(heading, changes);
  panel.hidden = false;
  dialog.querySelector("[data-anyway]").hidden = false;
  dialog.querySelector("[data-confirm]").hidden = true;
  dialog.querySelector("[data-anyway]").focus();
}

// Resolves to { version } once provisioned, { errors } when the API refused the draft,
// { unchanged } when the draft is the live configuration (nothing is provisioned), or null.
export function provision(onStart) {
  const dialog = document.getElementById("provision-dialog");
  const form = dialog.querySelector("form");
  form.reset();
  dialog.querySelector("[data-stale]").hidden = true;
  dialog.querySelector("[data-anyway]").hidden = true;
  dialog.querySelector("[data-confirm]").hidden = false;
  let outcome = null;
  const submit = async (event) => {
    const choice = event.submitter?.value;
    if (choice !== "ok" && choice !== "anyway") return;
    event.preventDefault();
    onStart(true);
    const body = { comment: form.elements.comment.value, confirm_stale: choice === "anyway" };
    const result = await api("POST", "/config/draft/provision", body);
    if (result.status === 409 && result.data?.code === "stale_draft") { onStart(false); showStale(dialog, result.data); return; }
    if (!result.ok) onStart(false);
    outcome = result.ok ? { version: result.data.version }
      : result.data?.code === "no_changes" ? { unchanged: result.data.live_version }
        : { errors: result.data?.errors ?? [], message: problem(result) };
    dialog.close("done");
  };
  form.addEventListener("submit", submit);
  const closed = showDialog(dialog, { onClose: () => form.removeEventListener("submit", submit) });
  fill(dialog);
  return closed.then(() => outcome);
}
