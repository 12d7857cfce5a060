// A row or a panel that just changed on a live page, briefly marked. The mark is a background
// and an outline only: it takes no room, so nothing moves when it comes and goes.

export function flash(element) {
  element.classList.remove("is-updated");
  void element.offsetWidth; // restart the animation
  element.classList.add("is-updated");
}
