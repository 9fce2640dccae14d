// An instance's snapshots (those `praisonai compute snapshots` lists with it as their source): take
// one, start a new instance from one (fork), roll the instance back to one (restore: a provider
// that cannot says so in its own sentence, shown as it is), remove one. Restore and remove ask once
// more before they act. The outcome of the last action is the line under the buttons.
import { el, getJSON, send, table } from "./api.js";

const COLUMNS = ["snapshot", "name", "age", "size", ""];

export function render(main, id) {
  const base = `/api/instances/${encodeURIComponent(id)}`;
  const name = el("input", { id: "snapshot-name", placeholder: "name (optional)", size: 24 });
  const outcome = el("p", { id: "snapshot-outcome", role: "status" });
  const take = el("button", { id: "snapshot", onclick: () => snapshot() }, "snapshot");
  const body = el("tbody");
  const empty = el("p", { class: "muted" }, "Looking for snapshots…");
  // busy: an action is under way (every button waits); confirming: "restore:ID" or "remove:ID"
  const state = { rows: [], busy: false, confirming: null };

  const say = (kind, ...text) => {
    outcome.className = kind;
    outcome.replaceChildren(...text);
  };

  async function show() {
    try {
      state.rows = (await getJSON(`${base}/snapshots`)).snapshots;
      empty.textContent = state.rows.length ? "" : "No snapshot of this instance yet.";
    } catch (error) {
      say("bad", error.message);
    }
    draw();
  }

  function draw() {
    body.replaceChildren(...state.rows.map(row));
    take.disabled = state.busy;
  }

  /** Run request (its answer goes to done, which says what was made); then list again. */
  async function act(doing, request, done) {
    state.busy = true;
    state.confirming = null;
    say("muted", `${doing}…`);
    draw();
    try {
      say("ok", ...done(await request()));
    } catch (error) {
      say("bad", error.message);
    } finally {
      state.busy = false;
      await show();
    }
  }

  const snapshot = () =>
    act(
      "taking a snapshot",
      () => send("POST", `${base}/snapshots`, { name: name.value.trim() || null }),
      (taken) => {
        name.value = "";
        return ["snapshot ", el("code", {}, taken.id), taken.name ? ` (${taken.name})` : "", " taken"];
      },
    );

  const fork = (s) =>
    act(
      `starting an instance from ${s.id}`,
      () => send("POST", `/api/snapshots/${encodeURIComponent(s.id)}/fork`),
      (made) => [
        "new instance ",
        el("code", { id: "forked-instance" }, made.instance),
        " ",
        links(made.instance),
      ],
    );

  const restore = (s) =>
    act(
      `restoring ${id} to ${s.id}`,
      () => send("POST", `${base}/restore`, { snapshot: s.id }),
      () => [el("code", {}, id), " restored to ", el("code", {}, s.id)],
    );

  const remove = (s) =>
    act(
      `removing ${s.id}`,
      () => send("DELETE", `/api/snapshots/${encodeURIComponent(s.id)}`),
      () => ["removed ", el("code", {}, s.id)],
    );

  /** A button that acts on the first click, or (confirm) asks on the first and acts on the second. */
  function button(s, verb, action, confirm = false) {
    const asked = state.confirming === `${verb}:${s.id}`;
    const click = () => {
      if (!confirm || asked) action(s);
      else {
        state.confirming = `${verb}:${s.id}`;
        draw();
      }
    };
    const attrs = { class: asked ? `${verb} confirm` : verb, disabled: state.busy, onclick: click };
    return el("button", attrs, asked ? `confirm ${verb}` : verb);
  }

  function row(s) {
    return el(
      "tr",
      { "data-snapshot": s.id },
      el("td", {}, el("code", {}, s.id)),
      el("td", {}, s.name ?? ""),
      el("td", {}, s.age),
      el("td", { class: "num" }, s.size),
      el(
        "td",
        { class: "actions" },
        button(s, "fork", fork),
        " ",
        button(s, "restore", restore, true),
        " ",
        button(s, "remove", remove, true),
      ),
    );
  }

  main.append(
    el("h1", {}, "Snapshots of ", el("code", {}, id), " ", links(id)),
    el("p", { class: "snapshot-take" }, name, " ", take),
    outcome,
    table("snapshots", COLUMNS, body),
    empty,
  );
  show();
}

/** The instance's terminal and files pages. */
function links(id) {
  const page = (what) =>
    el("a", { href: `#/instances/${encodeURIComponent(id)}/${what}`, class: "muted" }, what);
  return el("span", { class: "links" }, page("terminal"), " ", page("files"));
}
