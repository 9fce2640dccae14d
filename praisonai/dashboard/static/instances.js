// The instances page: every instance `praisonai compute ps` knows, live (server-sent events push
// a snapshot whenever it changes, a duration's text included: the ages read as `compute ps` prints
// them), with links to each one's terminal, files and snapshots, a stop button per instance and
// one per definition (a second click confirms).
import { el, fail, send, stream, table } from "./api.js";

const COLUMNS = ["instance", "provider", "definition", "status", "age", "idle", "ttl left", "owner", ""];

export function render(main) {
  const problems = el("div", { class: "problems", role: "status" });
  const definitions = el("div", { class: "definitions" });
  const body = el("tbody");
  const empty = el("p", { class: "muted" }, "Looking for instances…");
  main.append(el("h1", {}, "Instances"), problems, definitions, table("instances", COLUMNS, body), empty);
  // pending: the stop requests under way (by instance id or definition), kept across redraws
  const state = { snapshot: null, confirming: null, pending: new Set() };
  state.parts = { problems, definitions, body, empty };
  const shown = (_type, snapshot) => {
    state.snapshot = snapshot;
    drawAll(state);
  };
  return stream("/api/instances/events", shown, ["instances"]);
}

function drawAll(state) {
  const { problems, definitions, body, empty } = state.parts;
  const { instances } = state.snapshot;
  problems.replaceChildren(...state.snapshot.problems.map((p) => el("p", { class: "bad" }, p)));
  empty.textContent = instances.length ? "" : "No instances.";
  body.replaceChildren(...instances.map((row) => instanceRow(row, state)));
  definitions.replaceChildren(...definitionButtons(instances, state));
}

function instanceRow(row, state) {
  const id = row.instance;
  const actions = el(
    "td",
    { class: "actions" },
    el("a", { href: `#/instances/${encodeURIComponent(id)}/terminal` }, "terminal"),
    " ",
    el("a", { href: `#/instances/${encodeURIComponent(id)}/files` }, "files"),
    " ",
    el("a", { href: `#/instances/${encodeURIComponent(id)}/snapshots` }, "snapshots"),
    " ",
    stopButton(state, id, `/api/instances/${encodeURIComponent(id)}/stop`, "stop", { "data-stop": id }),
  );
  const status = row.reason ? `${row.status}: ${row.reason}` : row.status;
  return el(
    "tr",
    { "data-instance": id },
    el("td", {}, el("code", {}, id)),
    el("td", {}, row.flavour ? `${row.provider} (${row.flavour})` : row.provider),
    el("td", {}, el("code", {}, row.definition)),
    el("td", { class: `status ${row.status}` }, status),
    el("td", {}, row.age),
    el("td", {}, row.idle),
    el("td", {}, row.ttl_left),
    el("td", { class: "muted" }, row.owner || row.home),
    actions,
  );
}

function definitionButtons(instances, state) {
  const counts = new Map();
  for (const row of instances)
    if (row.definition) counts.set(row.definition, (counts.get(row.definition) ?? 0) + 1);
  return [...counts].map(([definition, count]) => {
    const path = `/api/definitions/${encodeURIComponent(definition)}/stop`;
    if (state.confirming !== definition) {
      const ask = () => {
        state.confirming = definition;
        drawAll(state);
      };
      return el(
        "button",
        { class: "danger", "data-definition": definition, onclick: ask },
        `stop all of ${definition} (${count})`,
      );
    }
    const label = `confirm: stop all ${count} of ${definition}`;
    return stopButton(state, definition, path, label, {
      "data-definition": definition,
      class: "danger confirm",
    });
  });
}

/** A button that POSTs to path once; while that runs (across redraws) it says so. */
function stopButton(state, key, path, label, attrs) {
  const pending = state.pending.has(key);
  const click = async () => {
    state.pending.add(key);
    state.confirming = null;
    drawAll(state);
    try {
      await send("POST", path);
    } catch (error) {
      fail(error);
    } finally {
      state.pending.delete(key);
      drawAll(state); // a failed stop gets its button back (a done one goes with the next snapshot)
    }
  };
  return el(
    "button",
    { class: "danger", ...attrs, disabled: pending, onclick: click },
    pending ? "stopping…" : label,
  );
}
