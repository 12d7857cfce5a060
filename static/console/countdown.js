// Countdowns to a moment (an eviction grace's end): every <time data-countdown datetime="…"> on
// the page shows the time left, "0:24 left", once a second; rows and panels added later count too.

function left(element, now) {
  const ms = Date.parse(element.getAttribute("datetime")) - now;
  if (Number.isNaN(ms)) return "";
  if (ms <= 0) return "over: the next pass evicts it";
  const seconds = Math.ceil(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  const text = `${minutes}:${String(seconds % 60).padStart(2, "0")} left`;
  return minutes >= 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min left` : text;
}

function tick() {
  const now = Date.now();
  for (const element of document.querySelectorAll("time[data-countdown]")) {
    const text = left(element, now);
    if (element.textContent !== text) element.textContent = text;
  }
}

if (!window.poolwebCountdown) {
  window.poolwebCountdown = setInterval(tick, 1000);
  tick();
}
