// What every page uses to talk to the server and to build its DOM.
// Text from instances and sessions is hostile: it only ever becomes DOM text (el() sets
// textContent), never markup. Durations and times come from the server already written as the CLI
// prints them (praisonai/_times.py): the page formats none itself.

// The page's key (see trade.js): every API request and socket carries it besides the cookie.
const key = localStorage.getItem("praisonai-key") ?? "";
const keyHeader = { "x-praisonai-token": key };

/** path with the key as a query parameter, for what cannot carry a header (event streams, sockets). */
function keyed(path) {
  const url = new URL(path, location.href);
  url.searchParams.set("key", key);
  return url.pathname + url.search;
}

export class HttpError extends Error {}

async function checked(response) {
  if (!response.ok) throw new HttpError((await response.text()).trim() || response.statusText);
  return response;
}

/** GET a JSON document. */
export async function getJSON(path) {
  return (await checked(await fetch(path, { headers: keyHeader }))).json();
}

/** A state-changing request (it carries the key header the server requires); JSON back. */
export async function send(method, path, body) {
  const init = { method, headers: { ...keyHeader } };
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
  const source = new EventSource(keyed(path));
  for (const type of types) source.addEventListener(type, (e) => onEvent(type, JSON.parse(e.data)));
  return () => source.close();
}

/** A websocket to path on this server. */
export function socket(path) {
  return new WebSocket(`ws://${location.host}${keyed(path)}`);
}

/** Download path as a file called name (fetched with the key, then saved from memory). */
export async function download(path, name) {
  const blob = await (await checked(await fetch(path, { headers: keyHeader }))).blob();
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
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

/** A table with one header row of column names, around body (the <tbody> its page fills). */
export function table(id, columns, body) {
  const head = el("tr", {}, ...columns.map((name) => el("th", {}, name)));
  return el("table", { id }, el("thead", {}, head), body);
}

/** Show a failure in the page's error line (and the console). */
export function fail(error) {
  console.error(error);
  const line =
    document.getElementById("error") ?? document.body.appendChild(el("p", { id: "error", role: "alert" }));
  line.textContent = String(error.message ?? error);
}
