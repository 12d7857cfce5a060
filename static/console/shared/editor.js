// Editor mode of the resource configuration page: the draft document held here while it is
// edited, written only by Save (PUT /api/v1/config/draft, with the version it was made from).
// Every edit re-renders the board on the server (/editor/board/), so a card looks the same in
// every mode, marked against the live version, with the API's errors at the cards they concern.

import { api, fragment, problem } from "./api.js";
import { confirmAction } from "./dialogs.js";
import * as edits from "./edits.js";
import { connectDialog, policyDialog, poolDialog, profileDialog } from "./forms.js";
import { connectable, orderable } from "./order.js";
import { preview, provision } from "./provision.js";

const KINDS = { pool: "pools", profile: "profiles", policy: "policies" };
const names = (entries) => (Array.isArray(entries) ? entries.map((entry) => entry.name) : []);

// A button by its name: its aria-label, or else its text.
function buttonNamed(scope, name) {
  return [...scope.querySelectorAll("button")].find((b) => (b.getAttribute("aria-label") ?? b.textContent.trim()) === name);
}

// After a re-render, the focus goes back to the button of that name (inside the list of that
// name, for the Move buttons); a Move button that became disabled hands it to its twin.
function focusNamed(name, withinLabel) {
  return () => {
    const scope = withinLabel ? document.querySelector(`[aria-label="${CSS.escape(withinLabel)}"]`) : document;
    if (!scope) return;
    let target = buttonNamed(scope, name);
    if (target?.disabled) target = buttonNamed(scope, name.replace(/ (up|down)$/, (_, d) => (d === "up" ? " down" : " up")));
    target?.focus();
  };
}

export class Editor {
  constructor({ board, redraw }) {
    Object.assign(this, { board, redraw, doc: null, base: null, saved: false, dirty: false, errors: [], warnings: [],
                          renders: 0, provisioned: false });
    this.bar = document.getElementById("editor-bar");
    this.message = document.getElementById("editor-message");
    this.bar.addEventListener("click", (event) => {
      const button = event.target.closest("[data-command]");
      if (button) this[button.dataset.command.replace(/-(\w)/g, (_, c) => c.toUpperCase())]();
    });
    board.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-action]");
      if (button && this.doc) this.act(button);
    });
    orderable(board, (list, order, label) => this.change(
      (doc) => edits.reorder(doc, list.dataset.list, Number(list.dataset.ownerIndex), order),
      focusNamed(label, list.getAttribute("aria-label"))));
    connectable(board, (profile, pool) => this.connect(profile, pool));
    window.addEventListener("beforeunload", (event) => {
      if (this.dirty) { event.preventDefault(); event.returnValue = ""; }
    });
  }

  isOpen() { return this.doc !== null; }
  provisioning() { return this.provisioned; }

  async open() {
    const info = await api("GET", "/config/draft/info");
    const source = info.ok ? await api("GET", info.data.exists ? "/config/draft" : "/config") : info;
    if (!source.ok) { this.say(`The editor could not open: ${problem(source)}`, "error"); return; }
    const { version, ...doc } = source.data;
    Object.assign(this, { doc, base: info.data.exists ? info.data.base_version : version, saved: info.data.exists,
                          dirty: false, errors: [], warnings: [] });
    document.body.classList.add("editing");
    this.bar.hidden = false;
    history.replaceState(null, "", "#editor");
    await this.render(() => this.bar.querySelector("button").focus());
    const from = this.base === null ? "" : ` made from version ${this.base}`;
    this.say(info.data.exists
      ? `Editing the saved draft${from}${info.data.stale ? `; version ${info.data.live_version} is live now` : ""}.`
      : `A new draft${from}. Nothing is stored until you save.`);
  }

  async render(focus) {
    const mine = ++this.renders;
    this.board.setAttribute("aria-busy", "true");
    let html;
    try {
      html = await fragment("/editor/board/", { document: this.doc, errors: this.errors, warnings: this.warnings });
    } catch (error) {
      this.board.removeAttribute("aria-busy");
      this.say(`The board could not be drawn: ${error.message}`, "error");
      return;
    }
    if (mine !== this.renders) return; // a later edit's render is on its way
    this.board.removeAttribute("aria-busy");
    this.board.innerHTML = html;
    this.redraw();
    this.status();
    focus?.();
  }

  change(edit, focus, { structural = false } = {}) {
    edit(this.doc);
    this.dirty = true;
    if (structural) Object.assign(this, { errors: [], warnings: [] }); // their paths point at other entries now
    return this.render(focus);
  }

  status() {
    const state = document.getElementById("draft-state");
    state.textContent = this.dirty ? "Unsaved changes" : this.saved ? "Draft saved" : "Not saved yet";
    state.classList.toggle("dirty", this.dirty);
  }

  say(text, level = "") {
    this.message.textContent = text;
    this.message.className = `editor-message ${level}`;
  }

  act(button) {
    const index = Number(button.dataset.index);
    const kind = button.dataset.kind;
    if (button.dataset.action === "edit") return this.edit(kind, index);
    if (button.dataset.action === "delete") return this.remove(kind, index);
    if (button.dataset.action === "connect") return this.connect(index);
    const profile = this.doc.profiles[index].name;
    return this.change((doc) => edits.disconnect(doc, index, button.dataset.pool),
                       focusNamed(`Connect ${profile}`));
  }

  addPool() { return this.edit("pool", null); }
  addProfile() { return this.edit("profile", null); }
  addPolicy() { return this.edit("policy", null); }

  async edit(kind, index) {
    const key = KINDS[kind];
    const entry = index === null ? null : structuredClone(this.doc[key][index]);
    const result = kind === "pool" ? await poolDialog(entry)
      : kind === "profile" ? await profileDialog(entry, names(this.doc.policies))
        : await policyDialog(entry, names(this.doc.pools));
    if (!result) return;
    await this.change((doc) => (index === null ? edits.add(doc, key, result) : edits.update(doc, key, index, result)),
                      focusNamed(`Edit ${result.name}`));
  }

  async remove(kind, index) {
    const key = KINDS[kind];
    const name = this.doc[key][index].name;
    const also = edits.consequences(this.doc, key, index);
    const confirmed = await confirmAction({
      title: `Delete ${kind} ${name}?`, confirm: "Delete", danger: true,
      message: [`It leaves the draft${also.length ? `, with ${also.join(" and ")}` : ""}.`,
                "Nothing changes for running work until the draft is provisioned."] });
    if (confirmed) await this.change((doc) => edits.remove(doc, key, index), focusNamed(`Add ${kind}`), { structural: true });
  }

  async connect(index, pool) {
    const profile = this.doc.profiles[index];
    const result = await connectDialog(profile, names(this.doc.pools), pool);
    if (!result) return;
    await this.change((doc) => edits.connect(doc, index, result.pool, result.name),
                      focusNamed(`Disconnect ${result.name || result.pool}`));
  }

  async save() {
    const query = this.base === null || this.base === undefined ? "" : `?base_version=${this.base}`;
    const result = await api("PUT", `/config/draft${query}`, this.doc);
    if (!result.ok) {
      Object.assign(this, { errors: result.data?.errors ?? [], warnings: [] });
      await this.render();
      this.say(`Not saved: ${problem(result)}. Your changes are kept here: correct them and save again.`, "error");
      return false;
    }
    Object.assign(this, { saved: true, dirty: false, errors: [], warnings: [] });
    await this.render();
    this.say("Draft saved.", "ok");
    return true;
  }

  async ensureSaved() {
    return this.dirty || !this.saved ? this.save() : true;
  }

  async validate() {
    if (!(await this.ensureSaved())) return;
    const result = await api("POST", "/config/draft/validate");
    if (!result.ok) { this.say(problem(result), "error"); return; }
    Object.assign(this, { errors: result.data.errors, warnings: result.data.warnings });
    await this.render();
    const warned = result.data.warnings.length ? ` (${result.data.warnings.length} warning${result.data.warnings.length > 1 ? "s" : ""})` : "";
    if (result.data.valid) this.say(`The draft is valid${warned}: it can be provisioned.`, warned ? "warning" : "ok");
    else this.say(`${result.data.errors.length} error${result.data.errors.length > 1 ? "s" : ""}${warned}: each is shown in the card it concerns.`, "error");
  }

  async preview() {
    if (await this.ensureSaved()) await preview();
  }

  async provision() {
    if (!(await this.ensureSaved())) return;
    const outcome = await provision((started) => { this.provisioned = started; });
    if (!outcome) return;
    if (outcome.version) {
      sessionStorage.setItem("poolweb.notice", `Version ${outcome.version} is provisioned and live.`);
      history.replaceState(null, "", "/");
      location.reload();
      return;
    }
    if (outcome.unchanged) {
      this.say(`Nothing provisioned: the draft configures exactly what version ${outcome.unchanged} does.`, "warning");
      this.message.focus();
      return;
    }
    Object.assign(this, { errors: outcome.errors, warnings: [] });
    await this.render();
    this.say(`Not provisioned: ${outcome.message}`, "error");
  }

  async reset() {
    const confirmed = await confirmAction({
      title: "Reset the draft?", confirm: "Reset", danger: true,
      message: ["The saved draft and any unsaved changes are discarded.",
                "The editor starts again from the live configuration." ] });
    if (!confirmed) return;
    const result = await api("DELETE", "/config/draft");
    if (!result.ok) { this.say(`Not reset: ${problem(result)}`, "error"); return; }
    this.dirty = false;
    await this.open();
    this.say("The draft is discarded: you are editing the live configuration again.", "ok");
  }

  async exit() {
    if (this.dirty && !(await confirmAction({
      title: "Leave the editor?", confirm: "Discard changes", cancel: "Keep editing", danger: true,
      message: "You have unsaved changes. They are lost if you leave without saving." }))) return;
    this.dirty = false;
    history.replaceState(null, "", "/");
    location.reload();
  }
}
