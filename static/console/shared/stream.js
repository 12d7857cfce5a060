// The event stream (/ws/events/, api.md §3) for the page: signed in by the session cookie,
// resumed from the last seq after a drop, shown by the live indicator (role status).

const handlers = new Map();
const RETRY_MS = [500, 1000, 2000, 4000, 8000];

export function on(type, handler) {
  if (!handlers.has(type)) handlers.set(type, []);
  handlers.get(type).push(handler);
}

function emit(type, data) {
  for (const handler of handlers.get(type) ?? []) handler(data);
}

// ``since``: the seq the page was rendered at (null: from now), so nothing after it is missed.
export function startStream(indicator, since = null) {
  let last = since;
  let failures = 0;
  const show = (state, text) => {
    if (!indicator) return;
    indicator.dataset.state = state;
    indicator.textContent = text;
  };
  const connect = () => {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    // The resume point rides in the URL, known with the handshake (docs/events.md).
    const resume = last === null ? "" : `?resume_from=${last}`;
    const socket = new WebSocket(`${scheme}://${location.host}/ws/events/${resume}`);
    socket.addEventListener("open", () => {
      if (last === null) socket.send(JSON.stringify({ resume_from: null })); // new events only, at once
      failures = 0;
      show("live", "Live");
    });
    socket.addEventListener("message", (message) => {
      const event = JSON.parse(message.data);
      if (event.type === "resync") { emit("resync", {}); return; }
      if (event.type === "error") return; // the server closes right after, and we reconnect
      last = event.seq;
      emit(event.type, event.data);
    });
    socket.addEventListener("close", () => {
      show("reconnecting", "Reconnecting…");
      setTimeout(connect, RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]);
    });
  };
  connect();
}
