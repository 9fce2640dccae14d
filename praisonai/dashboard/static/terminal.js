// A terminal into an instance: xterm.js over a websocket to the instance's PTY. Keys go out and
// output comes in as binary frames; a text frame out is a new size, one in says how it ended.
import { el, socket } from "./api.js";
import { FitAddon } from "./vendor/addon-fit.mjs";
import { Terminal } from "./vendor/xterm.mjs";

export function render(main, id) {
  stylesheet("/static/vendor/xterm.css");
  const status = el("span", { class: "muted", id: "terminal-status" }, "connecting…");
  const box = el("div", { id: "terminal" });
  main.append(el("h1", {}, "Terminal ", el("code", {}, id), " ", status), box);
  const term = new Terminal({ fontSize: 13, cursorBlink: true, scrollback: 5000 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  const ws = socket(`/ws/instances/${encodeURIComponent(id)}/terminal?cols=${term.cols}&rows=${term.rows}`);
  ws.binaryType = "arraybuffer";
  const keys = new TextEncoder();
  let ended = false;
  ws.onopen = () => {
    status.textContent = "connected";
    term.focus();
  };
  ws.onmessage = (event) => {
    if (typeof event.data !== "string") return term.write(new Uint8Array(event.data));
    const end = JSON.parse(event.data);
    ended = true;
    status.textContent = "error" in end ? end.error : `ended (exit ${end.exit})`;
    status.className = "error" in end ? "bad" : "muted";
  };
  ws.onclose = () => {
    if (!ended) status.textContent = "disconnected";
  };
  const typed = term.onData((data) => ws.readyState === WebSocket.OPEN && ws.send(keys.encode(data)));
  const resized = term.onResize(
    ({ cols, rows }) => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ cols, rows })),
  );
  const refit = () => fit.fit();
  window.addEventListener("resize", refit);
  return () => {
    window.removeEventListener("resize", refit);
    typed.dispose();
    resized.dispose();
    ws.close();
    term.dispose();
  };
}

function stylesheet(href) {
  if (!document.querySelector(`link[href="${href}"]`))
    document.head.append(el("link", { rel: "stylesheet", href }));
}
