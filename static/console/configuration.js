// The resource configuration page (/): lines between the cards, live usage, the notice when
// another version is provisioned, and for admins the editor (editor.js).

import { on, startStream } from "./shared/stream.js";
import { followLines } from "./shared/lines.js";
import { refreshPools, showPool } from "./shared/usage.js";

const page = JSON.parse(document.getElementById("page-data").textContent);
const board = document.getElementById("board");
const redraw = followLines(board);
let editor = null;

// A notice the editor left before reloading (a provision), shown once; the focus goes to it, where
// the person's attention is, rather than to the top of the page.
const left = sessionStorage.getItem("poolweb.notice");
if (left) {
  sessionStorage.removeItem("poolweb.notice");
  const notice = Object.assign(document.createElement("p"), { className: "notice success", textContent: left,
                                                              id: "provisioned", tabIndex: -1 });
  document.getElementById("notices").append(notice);
  notice.focus();
}

on("pool.updated", (state) => { if (!document.body.classList.contains("editing")) showPool(board, state); });
on("resync", () => refreshPools(board));
on("config.provisioned", (data) => {
  if (data.version === page.live_version || editor?.provisioning()) return;
  const notice = document.createElement("p");
  notice.className = "notice warning";
  notice.id = "provisioned-notice";
  const by = data.author ? ` by ${data.author}` : "";
  const draft = editor?.isOpen() ? " Your draft stays as it is; provisioning it will show what changed." : "";
  notice.textContent = `Version ${data.version} was provisioned${by}${data.comment ? ` (“${data.comment}”)` : ""}; `
    + `this page shows version ${page.live_version}.${draft}`;
  const reload = document.createElement("button");
  reload.type = "button";
  reload.className = "button small";
  reload.textContent = "Reload";
  reload.addEventListener("click", () => location.reload());
  notice.append(reload);
  document.getElementById("provisioned-notice")?.remove();
  document.getElementById("notices").append(notice);
});
startStream(document.querySelector("[data-live]"), page.seq);

if (page.admin) {
  // Members never load the editor; for admins the button works from the first moment.
  const ready = import("./shared/editor.js").then(({ Editor }) => { editor = new Editor({ board, redraw }); return editor; });
  document.getElementById("open-editor").addEventListener("click", async () => (await ready).open());
  document.getElementById("first-pool")?.addEventListener("click", async () => {
    const opened = await ready;
    await opened.open();
    opened.addPool();
  });
  if (location.hash === "#editor") (await ready).open();
}
