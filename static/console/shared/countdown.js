// Countdowns to a moment (an eviction grace's end): every <time data-countdown datetime="…"> on
// the page says, once a second, when it comes, as the end of a sentence: "in 4 min 10 s", "in 24 s";
// rows and panels added later count too.

function left(element, now) {
  const ms = Date.parse(element.getAttribute("datetime")) - now;
  if (Number.isNaN(ms)) return "";
  if (ms <= 0) return "now: the next pass evicts it";
  const seconds = Math.ceil(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  if (minutes >= 60) return `in ${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  return minutes ? `in ${minutes} min ${seconds % 60} s` : `in ${seconds} s`;
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
