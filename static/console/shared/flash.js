// A row, a panel or a card that just changed on a live page, marked for a moment. The mark is a
// steady background (an outline on cards): it takes no room, so nothing moves when it comes and
// goes, and it costs two paints, where a fade repainted the element every frame it ran (decision 67).

const FRESH_MS = 1500;

export function flash(element) {
  element.classList.add("is-fresh");
  clearTimeout(element.freshTimer);
  element.freshTimer = setTimeout(() => element.classList.remove("is-fresh"), FRESH_MS);
}
