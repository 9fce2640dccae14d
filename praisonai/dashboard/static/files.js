// The files of an instance: a directory at a time (links shown as links, never followed),
// a download link per regular file, and an upload into the directory shown.
import { download, el, fail, getJSON, send, table } from "./api.js";

export function render(main, id) {
  const base = `/api/instances/${encodeURIComponent(id)}`;
  const where = el("code", { id: "files-path" });
  const body = el("tbody");
  const picker = el("input", { type: "file", id: "upload" });
  const state = { path: "." };

  async function show(path) {
    try {
      const listing = await getJSON(`${base}/files?path=${encodeURIComponent(path)}`);
      state.path = listing.path;
      where.textContent = listing.path;
      const up = listing.path === "/" ? [] : [row({ name: "..", type: "dir", path: `${listing.path}/..` })];
      body.replaceChildren(...up, ...listing.entries.map(row));
    } catch (error) {
      fail(error);
    }
  }

  function row(entry) {
    let name;
    if (entry.type === "dir") name = link(`${entry.name}/`, () => show(entry.path));
    else if (entry.type === "file") name = link(entry.name, () => fetchFile(entry));
    else if (entry.type === "symlink")
      name = el("span", {}, entry.name, el("span", { class: "muted" }, ` → ${entry.symlink_target}`));
    else name = el("span", {}, entry.name);
    const when = entry.mtime ? new Date(entry.mtime * 1000).toISOString().replace("T", " ").slice(0, 19) : "";
    return el(
      "tr",
      { "data-name": entry.name },
      el("td", {}, name),
      el("td", {}, entry.type),
      el("td", { class: "num" }, entry.size ?? ""),
      el("td", { class: "muted" }, when),
    );
  }

  function fetchFile(entry) {
    download(`${base}/file?path=${encodeURIComponent(entry.path)}`, entry.name).catch(fail);
  }

  async function upload() {
    const file = picker.files[0];
    if (!file) return;
    const target = `${state.path.replace(/\/$/, "")}/${file.name}`;
    try {
      await send("PUT", `${base}/file?path=${encodeURIComponent(target)}`, file);
      picker.value = "";
      await show(state.path);
    } catch (error) {
      fail(error);
    }
  }

  main.append(
    el(
      "h1",
      {},
      "Files of ",
      el("code", {}, id),
      " ",
      el("a", { href: `#/instances/${encodeURIComponent(id)}/terminal`, class: "muted" }, "terminal"),
    ),
    el(
      "p",
      {},
      "In ",
      where,
      " ",
      picker,
      " ",
      el("button", { id: "upload-button", onclick: upload }, "upload"),
    ),
    table("files", ["name", "type", "size", "modified"], body),
  );
  show(state.path);
}

/** A link that runs action instead of going anywhere. */
function link(text, action) {
  const click = (event) => {
    event.preventDefault();
    action();
  };
  return el("a", { href: "#", onclick: click }, text);
}
