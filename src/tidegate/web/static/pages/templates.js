// Custom parsing templates: list (in the order they are tried, with how many lines each
// parsed and when last), create, edit, reorder, activate, delete; before saving, a preview of the fields the pattern would capture
// from the account's latest lines (POST /v1/config/parsing/templates/preview).
import { del, get, patch, post, put } from "../api.js";
import { clear, errorBox, field, fillFrom, formatCount, formatTime, formButtons, h, listTable, onSubmit, previewButton } from "../dom.js";
import { session } from "../session.js";

const TEMPLATES = "/v1/config/parsing/templates";
const SAMPLE = 20;
const STATES = ["draft", "inactive", "active"];

// A line's captured fields; or the active template tried before this one that takes it
// (ingestion tries them in order, the first match wins); or "no match".
// What a template sets of the line itself (its _app, _host and _ts captures).
function previewSets(sets) {
  const parts = [];
  if (sets.app) parts.push(`app ${sets.app}`);
  if (sets.host) parts.push(`host ${sets.host}`);
  if (sets.ts !== null && sets.ts !== undefined) parts.push(`time ${formatTime(sets.ts)}`);
  return h("div", { class: "muted", testid: "template-preview-sets" }, `sets ${parts.join(", ") || "nothing (the _ts capture is not a time)"}`);
}

function previewFields(line) {
  if (line.matched) return [h("code", {}, JSON.stringify(line.fields || {})), line.sets ? previewSets(line.sets) : null];
  if (line.taken_by) return h("span", { class: "muted", testid: "template-preview-taken" }, `taken first by “${line.taken_by.name}”`);
  return h("span", { class: "muted" }, "no match");
}

function previewTable(found) {
  return h(
    "table",
    { class: "list template-preview-lines" },
    h("thead", {}, h("tr", {}, h("th", {}, "Line"), h("th", {}, "Fields"))),
    h(
      "tbody",
      {},
      found.lines.map((line) =>
        h(
          "tr",
          { testid: "template-preview-line", class: line.matched ? "matched" : "unmatched" },
          h("td", {}, h("code", {}, line.line)),
          h("td", { testid: "template-preview-fields" }, previewFields(line)),
        ),
      ),
    ),
  );
}

function templateForm(template, done) {
  const name = h("input", { required: true, maxlength: 250, value: template.name || "", testid: "template-name" });
  const pattern = h("textarea", { required: true, maxlength: 4096, rows: 3, testid: "template-pattern", placeholder: "%{IP:client} %{WORD:method} %{URIPATH:path} status=(?P<status>\\d+)" }, template.pattern || "");
  const state = h("select", { testid: "template-state" }, STATES.map((value) => h("option", { value, selected: (template.state || "draft") === value }, value)));
  const result = h("div", { class: "preview", testid: "template-preview" });
  const problem = h("div", {});
  const previewPattern = previewButton("template-preview-button", result, "Trying the latest lines…", async () => {
    // A saved template is tried after the active ones before it; a new one after them all.
    const body = { pattern: pattern.value, size: SAMPLE, ...(template.id ? { id: template.id } : {}) };
    const found = await post(`${TEMPLATES}/preview`, body);
    const taken = found.taken ? `; ${found.taken} taken first by earlier templates` : "";
    return [
      h("p", { testid: "template-preview-count" }, `${found.matched} of the latest ${found.total} lines match${taken}; fields: ${found.fields.join(", ")}`),
      found.lines.length ? previewTable(found) : null,
    ];
  });
  const form = h(
    "form",
    { class: "card rule-form" },
    h("h2", {}, template.id ? `Edit “${template.name}”` : "New parsing template"),
    field("Name", name),
    field("Pattern", pattern, "RE2 with named groups (?P<field>…) and %{NAME:field} tokens (WORD, INT, NUMBER, IP, URIPATH, LOGLEVEL, GREEDYDATA, …); %{INT:field:int} stores a number; captures named _app, _host and _ts set the line's app, host and time, level its level"),
    field("State", state, "only active templates apply, to lines ingested from then on"),
    formButtons(previewPattern, "template-save", "Save template", () => done(false)),
    problem,
    result,
  );
  onSubmit(form, problem, async () => {
    const body = { name: name.value.trim(), pattern: pattern.value, state: state.value };
    if (template.id) await patch(`${TEMPLATES}/${encodeURIComponent(template.id)}`, body);
    else await post(TEMPLATES, body);
    done(true);
  });
  return form;
}

export async function render(main) {
  const canEdit = session.can("manage");
  const editor = h("div", {});
  const table = h("div", {});
  main.append(
    h("div", { class: "page-head" }, h("h1", {}, "Parsing templates"), canEdit ? h("button", { type: "button", class: "primary edit", testid: "template-new", onclick: () => edit({}) }, "New template") : null),
    h("p", { class: "muted" }, "Active templates are tried on each new line in this order, before the built-in parsers; the first that matches gives the line its fields."),
    editor,
    table,
  );

  function edit(template) {
    clear(editor).append(templateForm(template, (saved) => {
      clear(editor);
      if (saved) load();
    }));
  }

  async function act(request) {
    try {
      await request();
    } catch (error) {
      table.prepend(errorBox(error));
      return;
    }
    await load();
  }

  function move(templates, index, by) {
    const ids = templates.map((item) => item.id);
    const [moved] = ids.splice(index, 1);
    ids.splice(index + by, 0, moved);
    return act(() => put(`${TEMPLATES}/order`, { ids }));
  }

  function actions(templates, template, index) {
    if (!canEdit) return null;
    const path = `${TEMPLATES}/${encodeURIComponent(template.id)}`;
    return [
      h("button", { type: "button", class: "edit", title: "Move up", testid: "template-up", disabled: index === 0, onclick: () => move(templates, index, -1) }, "↑"),
      h("button", { type: "button", class: "edit", title: "Move down", testid: "template-down", disabled: index === templates.length - 1, onclick: () => move(templates, index, 1) }, "↓"),
      template.state === "active"
        ? h("button", { type: "button", class: "edit", testid: "template-deactivate", onclick: () => act(() => patch(path, { state: "inactive" })) }, "Deactivate")
        : h("button", { type: "button", class: "edit", testid: "template-activate", onclick: () => act(() => post(`${path}/activate`)) }, "Activate"),
      h("button", { type: "button", class: "edit", onclick: () => edit(template) }, "Edit"),
      h("button", { type: "button", class: "edit danger", testid: "template-delete", onclick: () => { if (confirm(`Delete “${template.name}”?`)) act(() => del(path)); } }, "Delete"),
    ];
  }

  function load() {
    return fillFrom(table, () => get(TEMPLATES), (templates) =>
      templates.length
        ? listTable(
            ["#", "Name", "Pattern", "Fields", "State", "Lines parsed", ""],
            templates.map((template, index) =>
              h(
                "tr",
                { testid: "template-row" },
                h("td", {}, String(index + 1)),
                h("td", { testid: "template-row-name" }, template.name),
                h("td", {}, h("code", {}, template.pattern)),
                h("td", {}, template.fields.join(", ")),
                h("td", { testid: "template-row-state" }, template.state),
                h(
                  "td",
                  { testid: "template-row-matched", title: "Counted by each server worker and saved every few seconds" },
                  formatCount(template.matched_lines),
                  template.last_matched_at ? h("div", { class: "muted", testid: "template-row-last-match" }, `last ${formatTime(template.last_matched_at)}`) : null,
                ),
                h("td", {}, actions(templates, template, index)),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No parsing templates: lines are parsed by the built-in parsers only."),
    );
  }
  await load();
}
