// The sessions page (not yet built).
import { el } from "./api.js";

export function render(main) {
  main.append(el("p", { class: "muted" }, "Not built yet."));
}
