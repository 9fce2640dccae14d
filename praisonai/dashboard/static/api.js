// What every page uses to talk to the server and to build its DOM.
// Text from instances and sessions is hostile: it only ever becomes DOM text (el() sets
// textContent), never markup.

const token = document.querySelector('meta[name="praisonai-token"]').content;

export class HttpError extends Error {}

async function checked(response) {
  if (!response.ok) throw new HttpError((await response.text()).trim() || response.statusText);
  return response;
}

/** GET a JSON document. */
export async function getJSON(path) {
  return (await checked(await fetch(path))).json();
}

/** A state-changing request (it carries the token header the server requires); JSON back. */
export async function send(method, path, body) {
  const init = { method, headers: { "x-praisonai-token": token } };
  if (body instanceof FormData || body instanceof Blob) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["content-type"] = "application/json";
  }
  const response = await checked(await fetch(path, init));
  return response.headers.get("content-type")?.startsWith("application/json") ? response.json() : null;
}

/** Server-sent events from path: onEvent(type, data) per event; returns the function that stops it. */
export function stream(path, onEvent, types = ["message"]) {
  const source = new EventSource(path);
  for (const type of types) source.addEventListener(type, (e) => onEvent(type, JSON.parse(e.data)));
  return () => source.close();
}

/** A websocket to path on this server. */
export function socket(path) {
  return new WebSocket(`ws://${location.host}${path}`);
}

/** el("td", {class: "x", onclick: f}, "text", child) — children are text or nodes. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** "3m", "2h", "5d" for seconds; "" for null. */
export function age(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const units = [[86400, "d"], [3600, "h"], [60, "m"]];
  for (const [size, unit] of units) if (seconds >= size) return `${Math.floor(seconds / size)}${unit}`;
  return `${Math.max(0, Math.floor(seconds))}s`;
}

/** Show a failure in the page's error line (and the console). */
export function fail(error) {
  console.error(error);
  const line = document.getElementById("error") ?? document.body.appendChild(el("p", { id: "error", role: "alert" }));
  line.textContent = String(error.message ?? error);
}
