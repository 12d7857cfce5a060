// The page's one confirmation dialog (templates/console/partials/confirm_dialog.html) and the
// open/close of any <dialog> with its form: modal, focus returns to the opener. A dialog's Cancel
// is a plain button (data-cancel), not a submit button: the form's first submit button is the one
// Enter presses, and that must be the dialog's main action. Escape cancels (the browser's own).

// A browser presses that button for Enter in a field or on a check box, but not in a select (the
// policy's "At the limit", a quota's scope): there the dialog presses it.
function enterSubmits(event) {
  if (event.key !== "Enter" || event.defaultPrevented || event.isComposing || !event.target.matches("select")) return;
  const main = event.target.form?.querySelector("button[type=submit], button:not([type]), input[type=submit]");
  if (!main || main.disabled) return;
  event.preventDefault();
  event.target.form.requestSubmit(main);
}

export function showDialog(dialog, { onClose } = {}) {
  const opener = document.activeElement;
  const cancel = (event) => { if (event.target.closest("[data-cancel]")) dialog.close("cancel"); };
  dialog.addEventListener("click", cancel);
  dialog.addEventListener("keydown", enterSubmits);
  return new Promise((resolve) => {
    const closed = () => {
      dialog.removeEventListener("close", closed);
      dialog.removeEventListener("click", cancel);
      dialog.removeEventListener("keydown", enterSubmits);
      const value = dialog.returnValue;
      dialog.returnValue = "";
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
      onClose?.(value);
      resolve(value);
    };
    dialog.addEventListener("close", closed);
    dialog.returnValue = "";
    dialog.showModal();
  });
}

// Resolves true when the person confirms; the message may hold nodes or text.
export async function confirmAction({ title, message, confirm, cancel = "Cancel", danger = false }) {
  const dialog = document.getElementById("confirm-dialog");
  dialog.querySelector("#confirm-title").textContent = title;
  const body = dialog.querySelector("#confirm-message");
  body.replaceChildren(...[].concat(message).map((part) => (typeof part === "string" ? paragraph(part) : part)));
  const ok = dialog.querySelector("#confirm-ok");
  ok.textContent = confirm;
  ok.classList.toggle("danger", danger);
  ok.classList.toggle("primary", !danger);
  dialog.querySelector("#confirm-cancel").textContent = cancel;
  return (await showDialog(dialog)) === "confirm";
}

function paragraph(text) {
  const p = document.createElement("p");
  p.textContent = text;
  return p;
}
