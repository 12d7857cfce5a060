// Reordering the board's ordered lists (execution order, pool precedence, policy rank): by
// dragging an item, or by its Move up / Move down buttons, which keyboard users reach with Tab.
// Either way the list's new order goes to onChange(list, names, focusName): the caller writes it
// into the draft and re-renders, then puts the focus back on the control named focusName.

function names(list) {
  return [...list.children].map((li) => li.dataset.item);
}

function moveByButton(button, onChange) {
  const item = button.closest("li[data-item]");
  const list = item.parentElement;
  const sibling = button.dataset.move === "up" ? item.previousElementSibling : item.nextElementSibling;
  if (!sibling) return;
  if (button.dataset.move === "up") list.insertBefore(item, sibling);
  else list.insertBefore(sibling, item);
  onChange(list, names(list), button.getAttribute("aria-label"));
}

export function orderable(board, onChange) {
  let dragging = null;
  let before = null;
  board.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-move]");
    if (button && !button.disabled) moveByButton(button, onChange);
  });
  board.addEventListener("dragstart", (event) => {
    const item = event.target.closest?.("li[data-item][draggable]");
    if (!item) return;
    dragging = item;
    before = names(item.parentElement).join("\n");
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", item.dataset.item);
    item.classList.add("dragging");
  });
  board.addEventListener("dragover", (event) => {
    if (!dragging) return;
    const over = event.target.closest?.("li[data-item]");
    if (!over || over.parentElement !== dragging.parentElement) return;
    event.preventDefault();
    if (over === dragging) return;
    const box = over.getBoundingClientRect();
    const after = event.clientY > box.top + box.height / 2;
    over.parentElement.insertBefore(dragging, after ? over.nextElementSibling : over);
  });
  board.addEventListener("drop", (event) => { if (dragging) event.preventDefault(); });
  board.addEventListener("dragend", () => {
    if (!dragging) return;
    const item = dragging;
    dragging = null;
    item.classList.remove("dragging");
    const list = item.parentElement;
    if (names(list).join("\n") !== before) onChange(list, names(list), `Move ${item.dataset.item} up`);
  });
}

// A draggable that is not a list item is the profile's connector: dropped on a pool card, it
// asks to connect them (the Connect dialog opens with that pool chosen).
export function connectable(board, onConnect) {
  let profile = null;
  board.addEventListener("dragstart", (event) => {
    const handle = event.target.closest?.("[data-connector]");
    if (!handle) return;
    profile = Number(handle.dataset.index);
    event.dataTransfer.effectAllowed = "link";
    event.dataTransfer.setData("text/plain", handle.closest("[data-profile-card]").dataset.profile);
  });
  const target = (event) => (profile === null ? null : event.target.closest?.("[data-pool-card]"));
  board.addEventListener("dragover", (event) => {
    const pool = target(event);
    if (!pool) return;
    event.preventDefault();
    board.querySelectorAll(".drop-target").forEach((card) => card !== pool && card.classList.remove("drop-target"));
    pool.classList.add("drop-target");
  });
  board.addEventListener("drop", (event) => {
    const pool = target(event);
    if (!pool) return;
    event.preventDefault();
    onConnect(profile, pool.dataset.pool);
  });
  board.addEventListener("dragend", () => {
    profile = null;
    board.querySelectorAll(".drop-target").forEach((card) => card.classList.remove("drop-target"));
  });
}
