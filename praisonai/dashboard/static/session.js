// One session: its card and its timeline (messages, tool calls with their input and output,
// exit codes and durations, interrupts, resumes, what happened to its instance), streaming while
// it runs; a box to resume it with a new prompt, and a fork at a turn (`managed sessions fork
// --at-turn K`: no model is asked) that links to the new session. Every text is hostile: it is only
// ever DOM text, and long outputs are cut with the rest behind a <details>.
import { el, send, stream } from "./api.js";
import { statusText, tokens } from "./sessions.js";

const SHOWN_CHARS = 2000;
// What each instance event says, in words.
const SANDBOX = {
  "sandbox.provisioned": "instance made",
  "sandbox.reattached": "instance reattached",
  "sandbox.resumed": "instance resumed from pause",
  "sandbox.replaced": "instance replaced (the old one was gone)",
};

export function render(main, id) {
  const card = el("div", { class: "card", id: "session-card" });
  const timeline = el("ol", { class: "timeline", id: "timeline" });
  const prompt = el("textarea", { id: "prompt", rows: 3, placeholder: "Next message to the agent…" });
  const answer = el("span", { class: "muted", id: "resume-status" });
  const resume = async () => {
    answer.textContent = "";
    try {
      await send("POST", `/api/sessions/${encodeURIComponent(id)}/resume`, { prompt: prompt.value });
      prompt.value = "";
      answer.textContent = "resumed";
    } catch (error) {
      answer.textContent = error.message;
      answer.className = "bad";
    }
  };
  const fork = forkForm(id);
  main.append(
    el("h1", {}, "Session ", el("code", {}, id)),
    card,
    timeline,
    el(
      "div",
      { class: "resume" },
      prompt,
      el("button", { id: "resume", onclick: resume }, "resume"),
      " ",
      answer,
    ),
    fork.form,
  );
  const calls = new Map(); // tool_use id -> its list item, which its result completes
  return stream(
    `/api/sessions/${encodeURIComponent(id)}/events`,
    (type, data) => {
      if (type === "session") {
        card.replaceChildren(...cardLines(data));
        fork.turns(data.turns);
      } else {
        const item = eventItem(data, calls);
        if (item) timeline.append(item);
      }
    },
    ["session", "event"],
  );
}

/** The fork box: a turn (the last one until another is typed), a title, and what the fork made. */
function forkForm(id) {
  const turn = el("input", { id: "fork-turn", type: "number", min: 1, size: 4 });
  const title = el("input", { id: "fork-title", placeholder: "title (optional)", size: 24 });
  const answer = el("span", { id: "fork-status", class: "muted" });
  const button = el("button", { id: "fork", onclick: () => fork() }, "fork");
  const fork = async () => {
    button.disabled = true; // one fork per click: a second would make a second session
    answer.className = "muted";
    answer.replaceChildren("forking…");
    const body = { at_turn: turn.value === "" ? null : Number(turn.value), title: title.value || null };
    try {
      const made = await send("POST", `/api/sessions/${encodeURIComponent(id)}/fork`, body);
      const link = el("a", { id: "fork-link", href: `#/sessions/${encodeURIComponent(made.session_id)}` });
      link.append(el("code", {}, made.session_id));
      answer.className = "ok";
      answer.replaceChildren(
        "forked at turn ",
        String(made.at_turn),
        ": ",
        link,
        made.note ? ` (${made.note})` : "",
      );
    } catch (error) {
      answer.className = "bad";
      answer.replaceChildren(error.message);
    } finally {
      button.disabled = false;
    }
  };
  const form = el(
    "div",
    { class: "fork-session" },
    "fork at turn ",
    turn,
    " ",
    title,
    " ",
    button,
    " ",
    answer,
  );
  let typed = false;
  turn.addEventListener("input", () => {
    typed = true;
  });
  const turns = (count) => {
    turn.max = Math.max(count, 1);
    if (!typed) turn.value = count > 0 ? String(count) : "";
  };
  return { form, turns };
}

function cardLines(s) {
  const box = s.sandbox;
  const instance = box?.instance_id
    ? [
        el("a", { href: `#/instances/${encodeURIComponent(box.instance_id)}/terminal` }, box.instance_id),
        ` (${box.provider}${box.status ? `, ${box.status}` : ""})`,
      ]
    : ["none"];
  const line = (name, ...value) => el("div", {}, el("span", { class: "muted" }, `${name} `), ...value);
  return [
    line(
      "status",
      el(
        "span",
        { id: "session-status", class: `status ${s.status}` },
        statusText({ ...s, stop_reason: s.stop_reason?.type, pending: s.pending.length }),
      ),
    ),
    line("agent", `${s.agent.name}@${s.agent.version}`, s.agent.model ? ` · ${s.agent.model}` : ""),
    line(
      "tokens",
      el("span", { id: "session-tokens" }, tokens(s.usage)),
      ` · ${s.turns} ${s.turns === 1 ? "turn" : "turns"}`,
    ),
    cost(s.remote) ? line("cost", el("span", { id: "session-cost" }, cost(s.remote))) : null,
    line("instance", ...instance),
    s.title ? line("title", s.title) : null,
    s.last_error
      ? line("error", el("span", { class: "bad" }, s.last_error.message ?? JSON.stringify(s.last_error)))
      : null,
  ].filter(Boolean);
}

/** A hosted session's list cost as the API last reported it (minor units: "2500" is 25.00). */
function cost(remote) {
  const listed = remote?.usage?.list_cost;
  if (listed?.amount === undefined || listed?.amount === null) return null;
  const cents = Number(listed.amount);
  return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")} ${listed.currency ?? ""} (list price)`.trim();
}

function eventItem(ev, calls) {
  const text = (ev.content ?? []).map((part) => part.text ?? "").join("");
  switch (ev.type) {
    case "user.message":
      return item(ev, "user", el("div", { class: "who" }, "you"), el("div", { class: "text" }, text));
    case "agent.message":
      return item(ev, "agent", el("div", { class: "who" }, "agent"), el("div", { class: "text" }, text));
    case "agent.tool_use":
    case "agent.custom_tool_use": {
      const result = el("div", { class: "result muted" }, "running…");
      const node = item(
        ev,
        "tool",
        el("div", { class: "who" }, ev.name),
        el("pre", { class: "input" }, inputText(ev.input)),
        result,
      );
      calls.set(ev.id, result);
      return node;
    }
    case "agent.tool_result":
    case "user.custom_tool_result": {
      const slot = calls.get(ev.tool_use_id ?? ev.custom_tool_use_id);
      const done = resultNodes(ev, text);
      if (slot) {
        slot.className = "result";
        slot.replaceChildren(...done);
        return null;
      }
      return item(ev, "tool", el("div", { class: "who" }, ev.name ?? "result"), ...done);
    }
    case "user.interrupt":
      return item(ev, "note", "interrupted");
    case "user.tool_confirmation":
      return item(
        ev,
        "note",
        `tool call ${ev.result === "allow" ? "approved" : "denied"}${ev.deny_message ? `: ${ev.deny_message}` : ""}`,
      );
    case "session.resumed":
      return item(ev, "note", "session resumed");
    case "session.forked":
      return item(ev, "note", `forked from ${ev.from_session_id} at turn ${ev.at_turn}`);
    case "session.checkpoint":
      return item(ev, "note", `checkpoint of turn ${ev.turn}: snapshot ${ev.snapshot_id}`);
    case "session.error":
      return item(ev, "note bad", `error: ${ev.error?.message ?? JSON.stringify(ev.error)}`);
    case "session.status_idle":
      return item(ev, "note", `turn ended: ${ev.stop_reason?.type ?? "idle"}`);
    default:
      if (ev.type in SANDBOX)
        return item(ev, "note", `${SANDBOX[ev.type]}: ${ev.provider} ${ev.instance_id}`);
      return null; // spans, status_running: what the card and the tool items already say
  }
}

function resultNodes(ev, text) {
  const took = typeof ev.duration_s === "number" ? `, ${ev.duration_s.toFixed(2)}s` : "";
  const head = el("div", { class: ev.is_error ? "bad" : "ok" }, `[${outcome(ev)}${took}]`);
  if (text.length <= SHOWN_CHARS) return [head, el("pre", { class: "output" }, text)];
  const rest = el(
    "details",
    {},
    el("summary", {}, `show all ${text.length} characters`),
    el("pre", { class: "output" }, text),
  );
  return [head, el("pre", { class: "output" }, `${text.slice(0, SHOWN_CHARS)}…`), rest];
}

/** "exit 3" for a command, else "error" or "ok". */
function outcome(ev) {
  if (ev.exit_code !== undefined && ev.exit_code !== null) return `exit ${ev.exit_code}`;
  return ev.is_error ? "error" : "ok";
}

function inputText(input) {
  if (
    input &&
    typeof input === "object" &&
    Object.keys(input).length === 1 &&
    typeof input.command === "string"
  )
    return `$ ${input.command}`;
  return JSON.stringify(input, null, 2);
}

function item(ev, kind, ...children) {
  const when = ev.processed_at ? new Date(ev.processed_at * 1000).toLocaleTimeString() : "";
  return el(
    "li",
    { class: `event ${kind}`, "data-seq": ev.seq, "data-type": ev.type },
    el("span", { class: "when muted" }, when),
    ...children,
  );
}
