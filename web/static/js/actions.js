// Acting on alerts: the API token and name the user types (kept in this tab's sessionStorage
// only, never sent anywhere but with an action) and the requests that need them.
import { setText } from "./dom.js";

const TOKEN_KEY = "wmon.token";
const BY_KEY = "wmon.by";
export const NO_TOKEN =
  "Acknowledging and silencing need the server's API token (WMON_API_TOKEN): type it in the " +
  "API token field first.";
const REFUSED = {
  400: "Not accepted",
  401: "Refused",
  403: "Refused",
  404: "Not found",
  409: "Not possible",
};

function kept(key) {
  return sessionStorage.getItem(key) || "";
}

function keep(key, value) {
  if (value) sessionStorage.setItem(key, value);
  else sessionStorage.removeItem(key);
}

export function hasToken() {
  return kept(TOKEN_KEY) !== "";
}

// Who acts, as the API records it; left out when not typed, so that the API says "dashboard".
export function actor() {
  const by = kept(BY_KEY);
  return by ? { by } : {};
}

// The page's token form: its fields start from, and are kept in, sessionStorage.
export function tokenForm(form, onChange = () => {}) {
  const note = form.querySelector(".token-note");
  const show = () =>
    setText(
      note,
      hasToken()
        ? "Kept in this tab only."
        : "Needed to acknowledge, silence and lift silences (the server's WMON_API_TOKEN).",
    );
  form.elements.token.value = kept(TOKEN_KEY);
  form.elements.by.value = kept(BY_KEY);
  form.addEventListener("submit", (event) => event.preventDefault());
  form.elements.token.addEventListener("input", () => {
    keep(TOKEN_KEY, form.elements.token.value.trim());
    show();
    onChange();
  });
  form.elements.by.addEventListener("input", () => keep(BY_KEY, form.elements.by.value.trim()));
  show();
}

// A request that needs the token: `{ok: true, body}`, or `{ok: false, message}` with the API's
// own words and what kind of refusal it was.
export async function act(method, url, body) {
  if (!hasToken()) return { ok: false, message: NO_TOKEN };
  const headers = { Accept: "application/json", Authorization: `Bearer ${kept(TOKEN_KEY)}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, { method, headers, body: JSON.stringify(body) });
  } catch (error) {
    return { ok: false, message: `The server could not be reached: ${error.message}` };
  }
  const answer = await response.json().catch(() => ({}));
  if (response.ok) return { ok: true, body: answer };
  const kind = REFUSED[response.status] || "Failed";
  const reason = answer.error || response.statusText;
  return { ok: false, message: `${kind} (HTTP ${response.status}): ${reason}` };
}
