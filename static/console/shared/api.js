// The REST API and the console's fragments, from the page: session cookie, CSRF token header,
// JSON in and out. Nothing here decides anything: callers show the API's own messages.

const API = "/api/v1";

function csrfToken() {
  return document.querySelector('meta[name="csrf-token"]')?.content ?? "";
}

function headers(json) {
  const found = { "X-CSRFToken": csrfToken(), Accept: json ? "application/json" : "text/html" };
  if (json) found["Content-Type"] = "application/json";
  return found;
}

// { ok, status, data } — never throws for an HTTP error; a network failure is status 0.
export async function api(method, path, body) {
  let response;
  try {
    response = await fetch(API + path, {
      method, credentials: "same-origin", headers: headers(true),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    return { ok: false, status: 0, data: { detail: `the server did not answer (${error.message})` } };
  }
  let data = null;
  if (response.status !== 204) {
    try { data = await response.json(); } catch { data = null; }
  }
  return { ok: response.ok, status: response.status, data };
}

// What went wrong, in the API's words: its detail, or its errors' messages.
export function problem(result) {
  const data = result.data ?? {};
  if (Array.isArray(data.errors) && data.errors.length) {
    const shown = data.errors.slice(0, 3).map((e) => e.message).join("; ");
    const more = data.errors.length > 3 ? ` (and ${data.errors.length - 3} more)` : "";
    return shown + more;
  }
  return data.detail ?? `the server answered ${result.status}`;
}

// A console fragment (HTML rendered by the server); throws with the server's text on failure.
export async function fragment(path, body) {
  const response = await fetch(path, {
    method: "POST", credentials: "same-origin", headers: headers(false),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(text.length < 300 ? text : `the server answered ${response.status}`);
  return text;
}
