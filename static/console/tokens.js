// The tokens page (/account/tokens/): create a token and show its secret this once, with the
// lines that use it; revoke one after confirming. Both through the REST API (POST /tokens,
// DELETE /tokens/{id}); the list changes only once the API said it is done.

import { api, problem } from "./shared/api.js";
import { confirmAction } from "./shared/dialogs.js";
import { timeElement } from "./shared/times.js";

const form = document.getElementById("create-token");
const error = document.getElementById("create-error");
const panel = document.getElementById("new-token");
const rows = document.getElementById("tokens");
const notices = document.getElementById("tokens-notices");

function shell(text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

function showSecret(created) {
  const origin = location.origin;
  document.getElementById("new-secret").value = created.token;
  document.getElementById("curl-line").textContent =
    `curl -H "Authorization: Bearer ${created.token}" ${origin}/api/v1/requests`;
  document.getElementById("poolctl-lines").textContent =
    `export POOLWEB_URL=${shell(origin)}\nexport POOLWEB_TOKEN=${shell(created.token)}\npoolctl list`;
  document.getElementById("new-token-title").textContent = `New token “${created.name}”`;
  panel.hidden = false;
  document.getElementById("token-help").hidden = true;
  document.getElementById("new-secret").focus();
  document.getElementById("new-secret").select();
}

function cell(content, tag = "td") {
  const element = document.createElement(tag);
  if (tag === "th") element.scope = "row";
  element.append(content);
  return element;
}

function tokenRow(token, prefix) {
  const tr = document.createElement("tr");
  tr.dataset.token = String(token.id);
  tr.dataset.name = token.name;
  const revoke = Object.assign(document.createElement("button"), {
    type: "button", className: "button small danger-quiet", textContent: "Revoke" });
  revoke.dataset.revoke = "";
  revoke.setAttribute("aria-label", `Revoke ${token.name}`);
  const code = Object.assign(document.createElement("code"), { textContent: `${prefix}…` });
  tr.append(cell(token.name, "th"), cell(code), cell(timeElement(token.created_at)),
            cell(timeElement(token.last_used_at, "never")), cell(revoke));
  tr.lastElementChild.className = "actions-col";
  return tr;
}

function counted() {
  const count = rows.children.length;
  document.getElementById("token-count").textContent = String(count);
  document.getElementById("tokens-frame").hidden = count === 0;
  document.getElementById("tokens-empty").hidden = count > 0;
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = form.elements.name.value.trim();
  error.hidden = true;
  if (!name) { error.textContent = "Name the token first: what you will know it by."; error.hidden = false; return; }
  const button = form.querySelector('button[type="submit"]');
  button.disabled = true;
  const result = await api("POST", "/tokens", { name });
  button.disabled = false;
  if (!result.ok) { error.textContent = problem(result); error.hidden = false; return; }
  form.reset();
  rows.prepend(tokenRow(result.data, result.data.token.slice(0, 8)));
  counted();
  showSecret(result.data);
});

async function copy(button) {
  const source = document.getElementById(button.dataset.copy);
  const text = source.value ?? source.textContent;
  const status = document.getElementById("copy-status");
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    if (source.select) source.select(); // the person can still copy it by hand
    status.textContent = "The browser refused the clipboard: the text is selected, copy it by hand.";
    return;
  }
  status.textContent = `${button.textContent.replace("Copy ", "").replace(/^./, (c) => c.toUpperCase())} copied.`;
}

panel.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy]");
  if (button) copy(button);
});

document.getElementById("new-token-done").addEventListener("click", () => {
  for (const id of ["new-secret"]) document.getElementById(id).value = "";
  document.getElementById("curl-line").textContent = "";
  document.getElementById("poolctl-lines").textContent = "";
  document.getElementById("copy-status").textContent = "";
  panel.hidden = true;
  document.getElementById("token-help").hidden = false;
  form.elements.name.focus();
});

rows.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-revoke]");
  if (!button) return;
  const row = button.closest("tr");
  const name = row.dataset.name;
  const confirmed = await confirmAction({ title: `Revoke token “${name}”?`, confirm: "Revoke", danger: true,
    message: ["Scripts and clients signed in with it stop working at once, open event streams included.",
              "This cannot be undone: create a new token to replace it."] });
  if (!confirmed) return;
  const result = await api("DELETE", `/tokens/${row.dataset.token}`);
  notices.replaceChildren();
  if (!result.ok) {
    const notice = Object.assign(document.createElement("p"), { className: "notice error",
      textContent: `Token “${name}” was not revoked: ${problem(result)}` });
    notice.setAttribute("role", "alert");
    notices.append(notice);
    return;
  }
  row.remove();
  counted();
  form.elements.name.focus();
});
