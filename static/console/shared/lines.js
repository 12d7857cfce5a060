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

// The rows a lane's cards wrapped into: for a card's box, its row's bottom and whether the row is
// the lane's first or last. A row's cards share their top (the grid aligns them at its start).
function rowsOf(rects) {
  const bottoms = new Map();
  for (const rect of rects) {
    const top = Math.round(rect.top);
    bottoms.set(top, Math.max(bottoms.get(top) ?? -Infinity, rect.bottom));
  }
  const tops = [...bottoms.keys()].sort((a, b) => a - b);
  return (rect) => {
    const top = Math.round(rect.top);
    return { bottom: bottoms.get(top), first: top === tops[0], last: top === tops.at(-1) };
  };
}

// Each pool card once: its box, its row, and each profile's place in its execution order. Looking
// a pool up per line instead (every card, then every item of its order) made drawing quadratic:
// seconds for the 2,000 connections a configuration may have (docs/api.md §1).
function poolsOf(board) {
  const cards = [...board.querySelectorAll("[data-pool-card]")];
  const rects = cards.map((card) => card.getBoundingClientRect());
  const row = rowsOf(rects);
  const pools = new Map();
  cards.forEach((card, n) => {
    const items = [...card.querySelectorAll('[data-list="execution"] > li')];
    pools.set(card.dataset.pool, { rect: rects[n], row: row(rects[n]), count: items.length,
                                   places: new Map(items.map((li, at) => [li.dataset.item, at])), drawn: 0 });
  });
  return pools;
}

function gaps(board, selector) {
  const cards = board.querySelector(selector);
  const style = cards ? getComputedStyle(cards) : null;
  return { column: parseFloat(style?.columnGap) || 16, row: parseFloat(style?.rowGap) || 16 };
}

function drawLines(board) {
  const svg = board.querySelector("svg.lines");
  if (!svg) return;
  const origin = board.getBoundingClientRect();
  svg.setAttribute("width", board.scrollWidth);
  svg.setAttribute("height", board.scrollHeight);
  const pools = poolsOf(board);
  const profiles = [...board.querySelectorAll("[data-profile-card]")];
  const profileRects = profiles.map((card) => card.getBoundingClientRect());
  const profileRow = rowsOf(profileRects);
  const lanesBottom = Math.max(...[...pools.values()].map((pool) => pool.rect.bottom)) - origin.top;
  const around = { pools: gaps(board, ".lane-pools .cards"), profiles: gaps(board, ".lane-profiles .cards") };
  const paths = [];
  profiles.forEach((profile, n) => {
    const links = [...profile.querySelectorAll('[data-list="connections"] > li')];
    const q = profileRects[n];
    links.forEach((link, place) => {
      const pool = pools.get(link.dataset.item);
      if (!pool) return;
      const at = pool.places.get(profile.dataset.profile) ?? pool.drawn;
      const p = pool.rect;
      const from = { x: ends(pool.count || 1, at, p, origin), y: p.bottom - origin.top, row: pool.row.bottom - origin.top };
      const to = { x: ends(links.length, place, q, origin), y: q.top - origin.top };
      pool.drawn += 1;
      const first = profileRow(q).first;
      const shape = pool.row.last && first ? curve(from, to)
        : detour(from, to, { pool: p, profile: q, first, lastRow: pool.row.last, origin, lanesBottom, around,
                             lane: paths.length % 8 });
      paths.push(line(profile.dataset.profile, link.dataset.item, place, shape, link));
    });
  });
  svg.replaceChildren(...paths);
}

// From the pool's last row straight to the profiles' first row: a curve through the gap between
// the lanes (down to its row's bottom first, past a taller card beside it).
function curve(from, to) {
  const bend = Math.max(24, (to.y - from.row) / 2);
  return `M ${from.x.toFixed(1)} ${from.y.toFixed(1)} V ${from.row.toFixed(1)} C ${from.x.toFixed(1)} ${(from.row + bend).toFixed(1)} `
    + `${to.x.toFixed(1)} ${(to.y - bend).toFixed(1)} ${to.x.toFixed(1)} ${to.y.toFixed(1)}`;
}

// When the cards wrapped into rows, a line would cut across the cards between its ends: it goes
// round them instead, through the gaps — down the gutter beside its pool to the gap between the
// lanes, along it, and down the gutter beside its profile. ``lane`` keeps parallel lines apart.
function detour(from, to, { pool, profile, first, lastRow, origin, lanesBottom, around, lane }) {
  const spread = lane * 3;
  const belowPool = from.row + around.pools.row / 2;
  const poolGutter = pool.left - origin.left - around.pools.column / 2;
  const between = lanesBottom + 16 + spread;
  const profileGutter = profile.left - origin.left - around.profiles.column / 2;
  const aboveProfile = first ? between : to.y - around.profiles.row / 2;
  const downFromPool = lastRow ? [`V ${between}`] : [`V ${belowPool}`, `H ${poolGutter}`, `V ${between}`];
  const points = [`M ${from.x} ${from.y}`, ...downFromPool, `H ${profileGutter}`, `V ${aboveProfile}`, `H ${to.x}`, `V ${to.y}`];
  return points.join(" ").replace(/-?\d+\.\d+/g, (number) => Number(number).toFixed(1));
}

function line(profile, pool, place, shape, link) {
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", shape);
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
