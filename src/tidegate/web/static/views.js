// Views: a saved search (query, hosts, apps, levels) in a category, through the
// configuration API's /v1/config/view. The button is left out when the person may not
// edit, and stays invisible when the server has no views API.
import { available, post } from "./api.js";
import { clear, errorBox, field, h, splitList } from "./dom.js";
import { session } from "./session.js";

export const VIEWS = "/v1/config/view";

let known = null;
export async function viewsAvailable() {
  if (known === null) known = await available(VIEWS);
  return known;
}

export const viewId = (view) => view.viewID || view.viewid || view.id;

export function viewBody(name, category, state) {
  const body = { name, query: state.q || undefined };
  for (const list of ["hosts", "apps", "levels"]) if (state[list].length) body[list] = state[list];
  const categories = splitList(category);
  if (categories.length) body.category = categories;
  return body;
}

// `currentState()` gives the search to save: {q, hosts, apps, levels}. The button takes
// its place in the search bar at once, invisible, and shows when `reveal()` finds that
// the server has views: added later, it would move every button beside it under a
// pointer on its way to one of them (a click meant for Live then missed it).
export function saveViewButton(currentState) {
  if (!session.can("content")) return null;
  const wrap = h("span", { class: "save-view pending" });
  const reveal = () =>
    viewsAvailable().then((yes) => {
      if (yes) wrap.classList.remove("pending");
    });
  const button = h("button", { type: "button", testid: "save-view" }, "Save as view");
  wrap.append(button);
  button.addEventListener("click", () => {
    if (wrap.querySelector("form")) return;
    const name = h("input", { required: true, maxlength: 250, testid: "view-name" });
    const category = h("input", { placeholder: "optional, comma separated", testid: "view-category" });
    const problem = h("div", {});
    const form = h(
      "form",
      { class: "popover card" },
      field("View name", name),
      field("Category", category),
      h("button", { type: "submit", class: "primary", testid: "view-save-submit" }, "Save"),
      h("button", { type: "button", onclick: () => form.remove() }, "Cancel"),
      problem,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clear(problem);
      try {
        await post(VIEWS, viewBody(name.value.trim(), category.value, currentState()));
        form.replaceWith(h("span", { class: "saved", role: "status" }, `Saved view “${name.value.trim()}”`));
      } catch (error) {
        problem.append(errorBox(error));
      }
    });
    wrap.append(form);
    name.focus();
  });
  return { element: wrap, reveal };
}
