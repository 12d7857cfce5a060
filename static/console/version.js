// A version's page: its cards joined by their lines, and Restore into draft (POST /api/v1/config/versions/{n}/restore), asking first
// when it would replace a saved draft, then on to the editor.

import { api, problem } from "./shared/api.js";
import { confirmAction } from "./shared/dialogs.js";
import { followLines } from "./shared/lines.js";

const page = JSON.parse(document.getElementById("page-data").textContent);
const message = document.getElementById("restore-message");
followLines(document.getElementById("board"));

document.getElementById("restore").addEventListener("click", async () => {
  if (page.draft && !(await confirmAction({
    title: "Replace the saved draft?", confirm: "Restore", danger: true,
    message: `A draft is saved already. Restoring version ${page.version} replaces it.` }))) return;
  const result = await api("POST", `/config/versions/${page.version}/restore`);
  if (!result.ok) {
    message.textContent = `Not restored: ${problem(result)}`;
    message.className = "editor-message error";
    return;
  }
  location.href = "/#editor";
});
