// The page's router: #/instances, #/sessions, #/sessions/ID, #/instances/ID/terminal,
// #/instances/ID/files, #/instances/ID/snapshots. Each page module exports render(main, ...params),
// which fills main and returns a function that stops what it started (streams, sockets), called
// when the page changes.
import { el, fail, getJSON } from "./api.js";
import * as files from "./files.js";
import * as instances from "./instances.js";
import * as session from "./session.js";
import * as sessions from "./sessions.js";
import * as snapshots from "./snapshots.js";
import * as terminal from "./terminal.js";

const pages = [
  [/^#\/sessions\/([^/]+)$/, session, "sessions"],
  [/^#\/sessions$/, sessions, "sessions"],
  [/^#\/instances\/([^/]+)\/terminal$/, terminal, "instances"],
  [/^#\/instances\/([^/]+)\/files$/, files, "instances"],
  [/^#\/instances\/([^/]+)\/snapshots$/, snapshots, "instances"],
  [/^(#\/instances)?$|^#\/?$/, instances, "instances"],
];

const main = document.getElementById("page");
let stop = null;

function route() {
  if (stop) stop();
  stop = null;
  document.getElementById("error")?.remove();
  main.replaceChildren();
  const hash = location.hash;
  for (const [pattern, page, nav] of pages) {
    const match = pattern.exec(hash);
    if (!match) continue;
    for (const link of document.querySelectorAll("[data-nav]"))
      link.classList.toggle("active", link.dataset.nav === nav);
    try {
      stop =
        page.render(
          main,
          ...match
            .slice(1)
            .filter((p) => p !== undefined)
            .map(decodeURIComponent),
        ) ?? null;
    } catch (error) {
      fail(error);
    }
    return;
  }
  main.append(el("p", {}, "No such page."));
}

window.addEventListener("hashchange", route);
route();
getJSON("/api/about").then((about) => {
  document.getElementById("about").textContent = `${about.version} · ${about.home}`;
}, fail);
