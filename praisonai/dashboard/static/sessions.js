// The sessions page: what `praisonai managed sessions list` shows, live (server-sent events push
// the list whenever it changes), as a tree of forks: each session's forks are the rows under it,
// indented, with the turn they were forked at (a fork whose original is not listed says which it
// was).
import { el, stream, table } from "./api.js";

const COLUMNS = ["session", "agent", "model", "status", "turns", "tokens", "instance", "updated", "title"];

export function render(main) {
  const body = el("tbody");
  const empty = el("p", { class: "muted" }, "Looking for sessions…");
  main.append(el("h1", {}, "Sessions"), table("sessions", COLUMNS, body), empty);
  return stream(
    "/api/sessions/events",
    (_type, rows) => {
      empty.textContent = rows.length ? "" : "No sessions.";
      body.replaceChildren(...forest(rows).map(([row, depth]) => sessionRow(row, depth)));
    },
    ["sessions"],
  );
}

export function tokens(usage) {
  const used = (usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0);
  return `${used} (${usage?.input_tokens ?? 0} in, ${usage?.output_tokens ?? 0} out)`;
}

export function statusText(row) {
  const detail = [
    row.stop_reason && row.stop_reason !== row.status ? row.stop_reason : null,
    row.pending ? `${row.pending} pending` : null,
  ].filter(Boolean);
  return detail.length ? `${row.status} (${detail.join(", ")})` : row.status;
}

/** The rows depth first, each session's forks under it: [row, depth] pairs. A session whose
 * original is not listed is a root; each row comes once, so a loop of records (metadata an agent's
 * config wrote) is cut where it is entered. */
function forest(rows) {
  const listed = new Set(rows.map((row) => row.id));
  const forks = new Map();
  for (const row of rows) {
    const parent = row.forked_from?.session_id;
    if (parent && parent !== row.id && listed.has(parent))
      forks.set(parent, [...(forks.get(parent) ?? []), row]);
  }
  const ordered = [];
  const seen = new Set();
  const visit = (row, depth) => {
    if (seen.has(row.id)) return;
    seen.add(row.id);
    ordered.push([row, depth]);
    for (const fork of forks.get(row.id) ?? []) visit(fork, depth + 1);
  };
  for (const row of rows) if (!listed.has(row.forked_from?.session_id)) visit(row, 0);
  for (const row of rows) visit(row, 0); // what is left is in a loop
  return ordered;
}

function sessionCell(row, depth) {
  const link = el("a", { href: `#/sessions/${encodeURIComponent(row.id)}` }, el("code", {}, row.id));
  const from = row.forked_from;
  if (!from) return el("td", {}, link);
  const turn = el("span", { class: "muted fork-turn" }, ` at turn ${from.at_turn}`);
  if (depth > 0)
    return el("td", { class: "fork", style: `padding-left: ${depth * 1.5 + 0.6}rem` }, "↳ ", link, turn);
  return el(
    "td",
    {},
    link,
    el("span", { class: "muted fork-turn" }, ` forked from ${from.session_id}`),
    turn,
  );
}

function sessionRow(row, depth) {
  const box = row.sandbox ?? {};
  return el(
    "tr",
    { "data-session": row.id, "data-depth": depth, "data-parent": row.forked_from?.session_id },
    sessionCell(row, depth),
    el("td", {}, `${row.agent ?? row.agent_id}@${row.agent_version}`),
    el("td", {}, row.model ?? ""),
    el("td", { class: `status ${row.status}` }, statusText(row)),
    el("td", { class: "num" }, row.turns),
    el("td", { class: "num" }, tokens(row.usage)),
    el("td", {}, box.instance_id ? el("code", {}, box.instance_id) : ""),
    el("td", {}, row.updated),
    el("td", {}, row.title ?? ""),
  );
}
