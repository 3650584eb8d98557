// Saved views: open (as a search), rename, delete, grouped by category.
import { del, get, put } from "../api.js";
import { clear, errorBox, h } from "../dom.js";
import { session } from "../session.js";
import { VIEWS, viewId, viewsAvailable } from "../views.js";
import { searchUrl } from "./search.js";

function categoriesOf(view) {
  const raw = view.category ?? view.categories ?? [];
  const list = Array.isArray(raw) ? raw : [raw];
  const names = list.map((item) => (typeof item === "string" ? item : item && item.name)).filter(Boolean);
  return names.length ? names : ["Uncategorized"];
}

function openUrl(view) {
  return searchUrl({
    q: view.query || "",
    range: { preset: "24h" },
    hosts: view.hosts || [],
    apps: view.apps || [],
    levels: view.levels || [],
  });
}

export async function render(main) {
  main.append(h("h1", {}, "Views"));
  if (!(await viewsAvailable())) {
    main.append(h("p", { class: "muted" }, "This server has no views API yet."));
    return;
  }
  const box = h("div", {});
  main.append(box);

  async function load() {
    clear(box);
    let views;
    try {
      views = await get(VIEWS);
    } catch (error) {
      box.append(errorBox(error));
      return;
    }
    if (!views.length) {
      box.append(h("p", { class: "muted" }, "No views yet: save a search from the search page."));
      return;
    }
    const groups = new Map();
    for (const view of views) for (const name of categoriesOf(view)) groups.set(name, [...(groups.get(name) || []), view]);
    for (const [name, members] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
      box.append(
        h("h2", {}, name),
        h(
          "ul",
          { class: "rows" },
          members.map((view) =>
            h(
              "li",
              { class: "row", testid: "view-row" },
              h("a", { href: openUrl(view), class: "grow" }, view.name),
              h("code", { class: "muted" }, view.query || ""),
              session.can("content") ? [renameButton(view, load), deleteButton(view, load)] : null,
            ),
          ),
        ),
      );
    }
  }
  await load();
}

function renameButton(view, reload) {
  return h(
    "button",
    {
      type: "button",
      class: "edit",
      onclick: async (event) => {
        const name = prompt("New name", view.name);
        if (!name || name === view.name) return;
        try {
          await put(`${VIEWS}/${encodeURIComponent(viewId(view))}`, { ...view, name });
          reload();
        } catch (error) {
          event.target.after(errorBox(error));
        }
      },
    },
    "Rename",
  );
}

function deleteButton(view, reload) {
  return h(
    "button",
    {
      type: "button",
      class: "edit danger",
      onclick: async (event) => {
        if (!confirm(`Delete the view “${view.name}”?`)) return;
        try {
          await del(`${VIEWS}/${encodeURIComponent(viewId(view))}`);
          reload();
        } catch (error) {
          event.target.after(errorBox(error));
        }
      },
    },
    "Delete",
  );
}
