// a pending request's estimated start, as the server's {% starts %} tag writes it
// (poolweb/console/templatetags.py): "starts ≈ 14:20 UTC (run limits, high)", the date too when
// not today; "start unknown"; nothing before its first pass or unless pending. The words of each
// basis and its confidence are the server's (reconcile/eta.py), rendered into every page (base.html).

const words = JSON.parse(document.getElementById("eta-words")?.textContent ?? '{"basis": {}, "confidence": {}}');

const two = (n) => String(n).padStart(2, "0");

function when(at) {
  const today = new Date().toISOString().slice(0, 10);
  const day = at.toISOString().slice(0, 10);
  const time = `${two(at.getUTCHours())}:${two(at.getUTCMinutes())}`;
  return day === today ? time : `${day} ${time}`;
}

// The element for ``request`` (a request object), or null when there is nothing to say.
export function startsElement(request) {
  if (request.state !== "pending" || !request.eta_basis) return null;
  const span = Object.assign(document.createElement("span"), { className: "eta" });
  span.setAttribute("role", "note");
  if (!request.eta) {
    span.classList.add("muted");
    span.setAttribute("aria-label", "Estimated start: unknown");
    span.textContent = "start unknown";
    return span;
  }
  const at = new Date(request.eta);
  const basis = words.basis[request.eta_basis] ?? request.eta_basis;
  const sureness = words.confidence[request.eta_basis] ?? request.eta_confidence;
  span.setAttribute("aria-label", `Estimated start: ${when(at)} UTC, from ${basis}, ${sureness} confidence`);
  span.title = `${at.toISOString().slice(0, 19).replace("T", " ")} UTC`;
  const small = Object.assign(document.createElement("span"), { className: "eta-basis", textContent: `(${basis}, ${sureness})` });
  span.append(`starts ≈ ${when(at)} UTC `, small);
  return span;
}
