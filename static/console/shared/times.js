// Relative times in every <time data-relative> of the page ("3 minutes ago", "in 4 minutes"),
// kept current. The wording is the server's (poolweb/console/templatetags.py ``ago``: Django's
// timesince, the largest unit only, a no-break space inside), so a time reads the same whether
// the page was rendered with it or a live update wrote it. The exact time is the title.

const NBSP = "\u00a0";
const UNITS = [["week", 604800], ["day", 86400], ["hour", 3600], ["minute", 60]];
const REFRESH_MS = 30_000;

function plural(count, unit) {
  return `${count}${NBSP}${unit}${count === 1 ? "" : "s"}`;
}

// Whole calendar months from ``early`` to ``late`` (as Django counts them).
function months(early, late) {
  let total = (late.getUTCFullYear() - early.getUTCFullYear()) * 12 + late.getUTCMonth() - early.getUTCMonth();
  const dayLater = early.getUTCDate() > late.getUTCDate();
  const sameDayLater = early.getUTCDate() === late.getUTCDate()
    && early.getTime() % 86400000 > late.getTime() % 86400000;
  if (dayLater || sameDayLater) total -= 1;
  return Math.max(0, total);
}

function span(early, late) {
  const total = months(early, late);
  if (total >= 12) return plural(Math.floor(total / 12), "year");
  if (total > 0) return plural(total, "month");
  const seconds = (late - early) / 1000;
  for (const [unit, size] of UNITS) {
    if (seconds >= size) return plural(Math.floor(seconds / size), unit);
  }
  return plural(0, "minute");
}

export function relative(iso, now = new Date()) {
  const at = new Date(iso);
  const seconds = (now - at) / 1000;
  if (Math.abs(seconds) < 60) return "just now";
  return seconds < 0 ? `in ${span(now, at)}` : `${span(at, now)} ago`;
}

// "2026-12-01 14:50:33 UTC", as the server writes the title.
export function exact(iso) {
  return `${new Date(iso).toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

// The element for ``iso`` (null: a muted dash), as the server's ``{% time_ago %}`` renders it.
export function timeElement(iso, empty = "—") {
  if (!iso) return Object.assign(document.createElement("span"), { className: "muted", textContent: empty });
  const element = document.createElement("time");
  element.dataset.relative = "";
  setTime(element, iso);
  return element;
}

function setTime(element, iso) {
  element.dateTime = iso;
  element.title = exact(iso);
  element.textContent = relative(iso);
}

export function refreshTimes(root = document) {
  const now = new Date();
  for (const element of root.querySelectorAll("time[data-relative]")) {
    element.textContent = relative(element.dateTime, now);
  }
}

setInterval(refreshTimes, REFRESH_MS);
