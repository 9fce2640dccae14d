// The sessions page: what `praisonai managed sessions list` shows, live (server-sent events push
// the list whenever it changes).
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
      body.replaceChildren(...rows.map(sessionRow));
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

function sessionRow(row) {
  const box = row.sandbox ?? {};
  return el(
    "tr",
    { "data-session": row.id },
    el("td", {}, el("a", { href: `#/sessions/${encodeURIComponent(row.id)}` }, el("code", {}, row.id))),
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
