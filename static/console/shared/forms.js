// The editor's dialogs (templates/console/partials/editor_dialogs.html): filled from a draft
// entry, read back into one. Values are kept as typed — a number when it reads as one exactly —
// so that whatever is wrong with them is the API's to say, at its path, when the draft is saved.

import { showDialog } from "./dialogs.js";

const list = (value) => (Array.isArray(value) ? value : []);

function typed(text) {
  const value = text.trim();
  if (value === "") return undefined;
  const number = Number(value);
  return /^-?[0-9.]+$/.test(value) && String(number) === value ? number : value;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? "" : value);
  }
  node.append(...children);
  return node;
}

let ids = 0;

// A labelled input per resource key: gpu always, then the entry's keys, then added ones.
function resourceRow(rows, key, value) {
  const id = `resource-${++ids}`;
  const input = element("input", { id, name: `resource:${key}`, inputmode: "decimal", autocomplete: "off",
                                   value: value === undefined ? "" : String(value) });
  const row = element("div", { class: "resource-row", "data-key": key }, element("label", { for: id }, key), input);
  if (key !== "gpu") {
    const remove = element("button", { type: "button", class: "icon-button small", "aria-label": `Remove ${key}` }, "×");
    remove.addEventListener("click", () => row.remove());
    row.append(remove);
  }
  rows.append(row);
  return input;
}

function fillResources(form, amounts) {
  const rows = form.querySelector("[data-rows]");
  rows.replaceChildren();
  const values = amounts && typeof amounts === "object" ? amounts : {};
  resourceRow(rows, "gpu", values.gpu);
  for (const [key, value] of Object.entries(values)) if (key !== "gpu") resourceRow(rows, key, value);
  const input = form.querySelector("[data-new-key]");
  const addKey = () => {
    const key = input.value.trim();
    if (!key) return;
    const existing = rows.querySelector(`[data-key="${CSS.escape(key)}"] input`);
    (existing ?? resourceRow(rows, key, undefined)).focus();
    input.value = "";
  };
  form.querySelector("[data-add-key]").onclick = addKey;
  input.onkeydown = (event) => { if (event.key === "Enter") { event.preventDefault(); addKey(); } };
}

function readResources(form) {
  const amounts = {};
  for (const row of form.querySelectorAll("[data-rows] .resource-row")) {
    const value = typed(row.querySelector("input").value);
    if (value !== undefined) amounts[row.dataset.key] = value;
  }
  return amounts;
}

// A name as the display name suggests it: "H100, half a Superpod" → "h100-half-a-superpod".
function slug(text) {
  return text.toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "").replace(/[^a-z0-9_.-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "").slice(0, 63).replace(/-+$/, "");
}

// The name follows the display name (a new entry's, until a name of one's own is written); the
// hint says as one types whether the name is one (the server's pattern and words, on the input).
function followNames(form, entry) {
  const { display_name: shown, name } = form.elements;
  const hint = form.querySelector("[data-name-hint]");
  const rule = new RegExp(`^(?:${name.dataset.pattern})$`);
  const usual = hint.innerHTML;
  let derived = !entry;
  const check = () => {
    const bad = name.value !== "" && !rule.test(name.value);
    name.setAttribute("aria-invalid", String(bad));
    hint.classList.toggle("error", bad);
    if (bad) hint.textContent = `“${name.value}” cannot be a name: a name has ${hint.dataset.rule}.`;
    else hint.innerHTML = usual;
  };
  shown.oninput = () => { if (derived) name.value = slug(shown.value); check(); };
  name.oninput = () => { derived = name.value === ""; check(); };
  check();
}

function prepare(dialog, title, submit, entry) {
  const form = dialog.querySelector("form");
  form.reset();
  dialog.querySelector("h2").textContent = title;
  const button = dialog.querySelector("[data-submit]");
  if (button) button.textContent = submit;
  form.elements.name.value = entry?.name ?? "";
  form.elements.display_name.value = entry?.display_name ?? "";
  form.elements.description.value = entry?.description ?? "";
  followNames(form, entry);
  return form;
}

function names(form) {
  return { name: form.elements.name.value.trim(), display_name: form.elements.display_name.value.trim() };
}

async function ask(dialog) {
  return (await showDialog(dialog)) === "ok";
}

function withoutEmpty(entry) {
  return Object.fromEntries(Object.entries(entry).filter(([, value]) => value !== undefined && value !== ""));
}

// A pool's label: its key and value, each named by the label's place, and a way to remove it.
function labelRow(body, key = "", value = "") {
  const n = body.children.length + 1;
  const field = (name, label, text) => element("input", { name, "aria-label": `${label} of label ${n}`, value: text,
    autocomplete: "off", spellcheck: "false", list: name === "label-key" ? "pool-label-keys" : undefined });
  const remove = element("button", { type: "button", class: "icon-button small danger", "aria-label": `Remove label ${n}` }, "×");
  const row = element("tr", {}, ...[field("label-key", "Key", key), field("label-value", "Value", value), remove]
    .map((control) => element("td", {}, control)));
  remove.addEventListener("click", () => row.remove());
  body.append(row);
  return row;
}

function readLabels(body) {
  const labels = {};
  for (const row of body.children) {
    const key = row.querySelector('[name="label-key"]').value.trim();
    const value = row.querySelector('[name="label-value"]').value.trim();
    if (key || value) labels[key] = value;
  }
  return Object.keys(labels).length ? labels : undefined;
}

export async function poolDialog(entry) {
  const dialog = document.getElementById("pool-dialog");
  const form = prepare(dialog, entry ? `Edit pool ${entry.name}` : "Add pool", entry ? "Save" : "Create", entry);
  fillResources(form, entry?.capacity);
  const body = form.querySelector("[data-labels]");
  body.replaceChildren();
  const labels = entry?.labels && typeof entry.labels === "object" ? entry.labels : {};
  for (const [key, value] of Object.entries(labels)) labelRow(body, key, typeof value === "string" ? value : String(value));
  form.querySelector("[data-add-label]").onclick = () => labelRow(body).querySelector("input").focus();
  if (!(await ask(dialog))) return null;
  return withoutEmpty({ ...entry, ...names(form), description: form.elements.description.value,
                        capacity: readResources(form), labels: readLabels(body) });
}

export async function profileDialog(entry, policies) {
  const dialog = document.getElementById("profile-dialog");
  const form = prepare(dialog, entry ? `Edit profile ${entry.name}` : "Add profile", entry ? "Save" : "Create", entry);
  fillResources(form, entry?.resources);
  form.elements.dynamic.checked = entry?.dynamic === true;
  const chosen = list(entry?.policies);
  const box = form.querySelector("[data-policies]");
  box.replaceChildren(...policies.map((name) => element("label", { class: "check" },
    element("input", { type: "checkbox", name: "policy", value: name, checked: chosen.includes(name) }), ` ${name}`)));
  if (!policies.length) box.append(element("p", { class: "hint" }, "No policies yet: add one, then come back."));
  if (!(await ask(dialog))) return null;
  const ticked = [...box.querySelectorAll("input:checked")].map((input) => input.value);
  const rank = [...chosen.filter((name) => ticked.includes(name)), ...ticked.filter((name) => !chosen.includes(name))];
  return withoutEmpty({ ...entry, ...names(form), description: form.elements.description.value,
                        resources: readResources(form), dynamic: form.elements.dynamic.checked,
                        connections: list(entry?.connections), policies: rank });
}

function quotaRow(body, pools, quota = {}) {
  const n = body.children.length + 1;
  const scope = element("select", { "aria-label": `Scope of quota ${n}`, name: "scope" },
    element("option", { value: "*" }, "all pools"), ...pools.map((pool) => element("option", { value: pool }, pool)));
  scope.value = pools.includes(quota.scope) ? quota.scope : "*";
  if (quota.scope && quota.scope !== "*" && !pools.includes(quota.scope)) {
    scope.append(element("option", { value: quota.scope }, quota.scope));
    scope.value = quota.scope;
  }
  const field = (name, label, value) => element("input", { name, "aria-label": `${label} of quota ${n}`, autocomplete: "off",
    value: value === undefined || value === null ? "" : String(value), list: name === "key" ? "resource-keys" : undefined,
    inputmode: name === "key" ? undefined : "decimal" });
  const remove = element("button", { type: "button", class: "icon-button small danger", "aria-label": `Remove quota ${n}` }, "×");
  const row = element("tr", {}, ...[scope, field("key", "Key", quota.key ?? "gpu"), field("reserved", "Reserved", quota.reserved),
    field("limit", "Limit", quota.limit), remove].map((control) => element("td", {}, control)));
  remove.addEventListener("click", () => row.remove());
  body.append(row);
  return row;
}

export async function policyDialog(entry, pools) {
  const dialog = document.getElementById("policy-dialog");
  const form = prepare(dialog, entry ? `Edit policy ${entry.name}` : "Add policy", entry ? "Save" : "Create", entry);
  form.elements.group.value = entry?.group ?? "";
  form.elements.priority.value = entry?.priority ?? "";
  form.elements.min_runtime_seconds.value = entry?.min_runtime_seconds ?? "";
  form.elements.max_runtime_seconds.value = entry?.max_runtime_seconds ?? "";
  form.elements.max_wait_seconds.value = entry?.max_wait_seconds ?? "";
  form.elements.on_time_limit.value = entry?.on_time_limit ?? "end";
  form.elements.require_max_runtime.checked = entry?.require_max_runtime === true;
  const body = form.querySelector("[data-quotas]");
  body.replaceChildren();
  for (const quota of list(entry?.quotas)) quotaRow(body, pools, quota);
  form.querySelector("[data-add-quota]").onclick = () => quotaRow(body, pools).querySelector("select").focus();
  const budget = entry?.budget ?? {};
  form.elements.budget_hours.value = budget.hours ?? "";
  form.elements.budget_key.value = budget.key ?? "gpu";
  form.elements.budget_period.value = budget.period ?? "month";
  form.elements.budget_when_spent.value = budget.when_spent ?? "refuse";
  if (!(await ask(dialog))) return null;
  const quotas = [...body.children].map((row) => withoutEmpty({
    scope: row.querySelector('[name="scope"]').value, key: row.querySelector('[name="key"]').value.trim(),
    reserved: typed(row.querySelector('[name="reserved"]').value), limit: typed(row.querySelector('[name="limit"]').value),
  })).filter((quota) => quota.key || quota.reserved !== undefined || quota.limit !== undefined);
  const hours = typed(form.elements.budget_hours.value);
  // No hours: no budget (the field left out, as a document without one writes it).
  const budgetRead = hours === undefined ? undefined : withoutEmpty({
    key: form.elements.budget_key.value.trim(), hours, period: form.elements.budget_period.value,
    when_spent: form.elements.budget_when_spent.value });
  return withoutEmpty({ ...entry, ...names(form), description: form.elements.description.value,
                        group: form.elements.group.value.trim(), priority: typed(form.elements.priority.value),
                        min_runtime_seconds: typed(form.elements.min_runtime_seconds.value),
                        max_runtime_seconds: typed(form.elements.max_runtime_seconds.value),
                        max_wait_seconds: typed(form.elements.max_wait_seconds.value),
                        // The defaults are left out, as the server writes them.
                        on_time_limit: form.elements.on_time_limit.value === "end" ? undefined : form.elements.on_time_limit.value,
                        require_max_runtime: form.elements.require_max_runtime.checked || undefined, quotas,
                        budget: budgetRead });
}

export async function connectDialog(profile, pools, chosen) {
  const dialog = document.getElementById("connect-dialog");
  const form = dialog.querySelector("form");
  form.reset();
  dialog.querySelector("h2").textContent = `Connect ${profile.name}`;
  const taken = new Set(list(profile.connections).map((c) => c.pool));
  const free = pools.filter((pool) => !taken.has(pool));
  form.elements.pool.replaceChildren(...free.map((pool) => element("option", { value: pool }, pool)));
  if (chosen && free.includes(chosen)) form.elements.pool.value = chosen;
  const name = form.elements.connection;
  const suggest = () => { name.placeholder = form.elements.pool.value; };
  form.elements.pool.onchange = suggest;
  suggest();
  // Nothing left to choose: say why, and offer no Connect that would do nothing.
  const noneLeft = dialog.querySelector("[data-none-left]");
  noneLeft.textContent = pools.length
    ? `${profile.name} is connected to every pool already: add a pool first, or disconnect one.`
    : "There is no pool yet: add a pool first.";
  noneLeft.hidden = free.length > 0;
  for (const control of [form.elements.pool, name, dialog.querySelector("[data-submit]")]) control.disabled = !free.length;
  if (!(await ask(dialog)) || !form.elements.pool.value) return null;
  return { pool: form.elements.pool.value, name: name.value.trim() };
}
