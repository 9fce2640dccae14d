// The instances page: every instance `praisonai compute ps` knows, live (server-sent events push
// a snapshot whenever it changes; the durations advance here between snapshots), with a stop
// button per instance and one per definition (a second click confirms).
import { age, el, fail, send, stream, table } from "./api.js";

const COLUMNS = ["instance", "provider", "definition", "status", "age", "idle", "ttl left", "owner", ""];
const TICK_MS = 1000;

export function render(main) {
  const problems = el("div", { class: "problems", role: "status" });
  const definitions = el("div", { class: "definitions" });
  const body = el("tbody");
  const empty = el("p", { class: "muted" }, "Looking for instances…");
  main.append(el("h1", {}, "Instances"), problems, definitions, table("instances", COLUMNS, body), empty);
  // pending: the stop requests under way (by instance id or definition), kept across redraws
  const state = { snapshot: null, received: 0, confirming: null, pending: new Set() };
  state.parts = { problems, definitions, body, empty };
  const draw = () => state.snapshot && drawAll(state);
  const stop = stream(
    "/api/instances/events",
    (_type, snapshot) => {
      Object.assign(state, { snapshot, received: Date.now() / 1000 });
      draw();
    },
    ["instances"],
  );
  const ticking = setInterval(draw, TICK_MS);
  return () => {
    stop();
    clearInterval(ticking);
  };
}

function drawAll(state) {
  const { problems, definitions, body, empty } = state.parts;
  const { instances } = state.snapshot;
  const later = Date.now() / 1000 - state.received;
  problems.replaceChildren(...state.snapshot.problems.map((p) => el("p", { class: "bad" }, p)));
  empty.textContent = instances.length ? "" : "No instances.";
  body.replaceChildren(...instances.map((row) => instanceRow(row, later, state)));
  definitions.replaceChildren(...definitionButtons(instances, state));
}

function instanceRow(row, later, state) {
  const moved = (seconds) => (seconds === null ? null : seconds + later);
  const ttl = row.ttl_left_s === null ? null : Math.max(0, row.ttl_left_s - later);
  const id = row.instance;
  const actions = el(
    "td",
    { class: "actions" },
    el("a", { href: `#/instances/${encodeURIComponent(id)}/terminal` }, "terminal"),
    " ",
    el("a", { href: `#/instances/${encodeURIComponent(id)}/files` }, "files"),
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
    el("td", {}, age(moved(row.age_s))),
    el("td", {}, age(moved(row.idle_s))),
    el("td", {}, age(ttl)),
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
    }
  };
  return el(
    "button",
    { class: "danger", ...attrs, disabled: pending, onclick: click },
    pending ? "stopping…" : label,
  );
}
