// The SVG lines from each profile card to the pool cards it is connected to, redrawn whenever the
// board changes size (window resize, cards wrapping, a re-render). The preferred connection is a
// solid line, the fallbacks dashed; each line says in its title what it joins.

const SVG = "http://www.w3.org/2000/svg";
const SPREAD = 12; // px between the ends of lines that meet one card

function ends(count, place, rect, origin) {
  const middle = rect.left - origin.left + rect.width / 2;
  const offset = Math.max(-rect.width / 3, Math.min(rect.width / 3, (place - (count - 1) / 2) * SPREAD));
  return middle + offset;
}

// Each pool card once: its box, and each profile's place in its execution order. Looking a pool
// up per line instead (every card, then every item of its order) made drawing quadratic: seconds
// for the 2,000 connections a configuration may have (docs/api.md §1).
function poolsOf(board) {
  const pools = new Map();
  for (const card of board.querySelectorAll("[data-pool-card]")) {
    const items = [...card.querySelectorAll('[data-list="execution"] > li')];
    pools.set(card.dataset.pool, { rect: card.getBoundingClientRect(), count: items.length,
                                   places: new Map(items.map((li, at) => [li.dataset.item, at])), drawn: 0 });
  }
  return pools;
}

function drawLines(board) {
  const svg = board.querySelector("svg.lines");
  if (!svg) return;
  const origin = board.getBoundingClientRect();
  svg.setAttribute("width", board.scrollWidth);
  svg.setAttribute("height", board.scrollHeight);
  const pools = poolsOf(board);
  const paths = [];
  for (const profile of board.querySelectorAll("[data-profile-card]")) {
    const links = [...profile.querySelectorAll('[data-list="connections"] > li')];
    const q = profile.getBoundingClientRect();
    links.forEach((link, place) => {
      const pool = pools.get(link.dataset.item);
      if (!pool) return;
      const at = pool.places.get(profile.dataset.profile) ?? pool.drawn;
      const p = pool.rect;
      const x1 = ends(pool.count || 1, at, p, origin);
      const y1 = p.bottom - origin.top;
      const x2 = ends(links.length, place, q, origin);
      const y2 = q.top - origin.top;
      pool.drawn += 1;
      paths.push(line(profile.dataset.profile, link.dataset.item, place, [x1, y1, x2, y2], link));
    });
  }
  svg.replaceChildren(...paths);
}

function line(profile, pool, place, [x1, y1, x2, y2], link) {
  const path = document.createElementNS(SVG, "path");
  const bend = Math.max(24, (y2 - y1) / 2);
  path.setAttribute("d", `M ${x1.toFixed(1)} ${y1.toFixed(1)} C ${x1.toFixed(1)} ${(y1 + bend).toFixed(1)} `
    + `${x2.toFixed(1)} ${(y2 - bend).toFixed(1)} ${x2.toFixed(1)} ${y2.toFixed(1)}`);
  path.dataset.profile = profile;
  path.dataset.pool = pool;
  if (place > 0) path.classList.add("fallback");
  const title = document.createElementNS(SVG, "title");
  const name = link.querySelector(".item-text")?.firstChild?.textContent?.trim() ?? pool;
  title.textContent = `${profile} → ${pool} (${name}), preference ${place + 1}`;
  path.append(title);
  return path;
}

// Highlight a profile's lines while the pointer or focus is in its card.
function highlight(board, event, on) {
  const card = event.target.closest?.("[data-profile-card]");
  if (!card) return;
  for (const path of board.querySelectorAll("svg.lines path")) {
    if (path.dataset.profile === card.dataset.profile) path.classList.toggle("active", on);
  }
}

export function followLines(board) {
  let queued = false;
  const redraw = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; drawLines(board); });
  };
  new ResizeObserver(redraw).observe(board);
  window.addEventListener("resize", redraw);
  document.fonts?.ready.then(redraw);
  board.addEventListener("pointerover", (event) => highlight(board, event, true));
  board.addEventListener("pointerout", (event) => highlight(board, event, false));
  board.addEventListener("focusin", (event) => highlight(board, event, true));
  board.addEventListener("focusout", (event) => highlight(board, event, false));
  redraw();
  return redraw;
}
