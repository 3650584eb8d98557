// The account's service and ingestion keys: create (the secret is shown on creation),
// show (the v1 keys API returns the secret on GET, as the platform does; hidden until
// asked for), rename, delete.
import { del, get, post, put } from "../api.js";
import { clear, errorBox, field, fillFrom, formatTime, h, listTable, onSubmit } from "../dom.js";
import { session } from "../session.js";

const KEYS = "/v1/config/keys";
// `created` is epoch seconds in older answers, milliseconds in newer ones.
const createdMs = (created) => (created < 1e11 ? created * 1000 : created);

function secretCell(key) {
  if (!key.key) return h("code", { class: "muted" }, `…${key.hint || ""}`);
  const shown = h("code", {}, `…${key.hint || key.key.slice(-4)}`);
  const button = h("button", { type: "button", testid: "key-show" }, "Show");
  button.addEventListener("click", () => {
    const hidden = button.textContent === "Show";
    shown.textContent = hidden ? key.key : `…${key.hint || key.key.slice(-4)}`;
    button.textContent = hidden ? "Hide" : "Show";
  });
  return h("span", {}, shown, " ", button);
}

export async function render(main) {
  const canEdit = session.can("manage");
  const created = h("div", {});
  const table = h("div", {});
  main.append(h("h1", {}, "Keys"));
  if (canEdit) {
    const type = h("select", { testid: "key-type" }, h("option", { value: "service" }, "Service key (API)"), h("option", { value: "ingestion" }, "Ingestion key"));
    const name = h("input", { maxlength: 250, placeholder: "optional", testid: "key-name" });
    const problem = h("div", {});
    const form = h("form", { class: "inline-form edit" }, field("Type", type), field("Name", name), h("button", { type: "submit", class: "primary", testid: "key-create" }, "Create key"), problem);
    onSubmit(form, problem, async () => {
      const key = await post(KEYS, name.value.trim() ? { name: name.value.trim() } : {}, { type: type.value });
      name.value = "";
      clear(created).append(
        h("div", { class: "card notice", role: "status" }, h("p", {}, `New ${key.type} key${key.name ? ` “${key.name}”` : ""}:`), h("code", { class: "secret", testid: "key-secret" }, key.key)),
      );
      load();
    });
    main.append(form);
  }
  main.append(created, table);

  function load() {
    return fillFrom(table, () => get(KEYS), (keys) =>
      listTable(
        ["Type", "Name", "Key", "Created", ""],
        keys.map((key) =>
          h(
            "tr",
            { testid: "key-row" },
            h("td", {}, key.type),
            h("td", {}, key.name || ""),
            h("td", {}, secretCell(key)),
            h("td", {}, formatTime(createdMs(key.created))),
            h(
              "td",
              {},
              canEdit
                ? [
                    h("button", { type: "button", class: "edit", onclick: async () => { const value = prompt("Key name", key.name || ""); if (value !== null) { await put(`${KEYS}/${encodeURIComponent(key.id)}`, { name: value }).catch((e) => table.prepend(errorBox(e))); load(); } } }, "Rename"),
                    h("button", { type: "button", class: "edit danger", testid: "key-delete", onclick: async () => { if (confirm("Delete this key? It stops working at once.")) { await del(`${KEYS}/${encodeURIComponent(key.id)}`).catch((e) => table.prepend(errorBox(e))); load(); } } }, "Delete"),
                  ]
                : null,
            ),
          ),
        ),
      ),
    );
  }
  await load();
}
