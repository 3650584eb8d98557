// Views: a saved search (query, hosts, apps, levels) in a category, through the
// configuration API's /v1/config/view. The button is left out when the server has no
// views API or the person may not edit.
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

// `currentState()` gives the search to save: {q, hosts, apps, levels}.
export async function saveViewButton(currentState) {
  if (!session.can("content") || !(await viewsAvailable())) return null;
  const wrap = h("span", { class: "save-view" });
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
  return wrap;
}
