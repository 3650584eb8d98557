// Ingestion exclusion rules: list, create, edit, toggle, delete; before saving, a preview
// of what the rule would have excluded from the last hour's stored lines.
import { del, get, patch, post } from "../api.js";
import { clear, errorBox, field, fillFrom, formatCount, formButtons, h, listTable, onSubmit, previewButton, splitList } from "../dom.js";
import { lineElement, literal } from "../lines.js";
import { session } from "../session.js";

const RULES = "/v1/config/ingestion/exclusions";
const HOUR_MS = 3600e3;
const SAMPLE = 20;

// A rule's hosts/apps are names where `*` matches any run of characters, compared with
// the whole value in any case; its parts are ANDed. As a search: a name without `*` is
// `host:=="name"`, a name ending in its only `*` a prefix `host:"nam"`. Other globs
// (a `*` first or inside) have no exact search form: their text before the first `*`
// is used as a prefix, which selects more lines than the rule, so the preview says
// "at most".
export function ruleSearch(rule) {
  let exact = true;
  const part = (name, names) => {
    const tests = [];
    for (const glob of names) {
      const star = glob.indexOf("*");
      if (star < 0) tests.push(`${name}:==${literal(glob)}`);
      else {
        if (star !== glob.length - 1) exact = false;
        const prefix = glob.slice(0, star);
        tests.push(prefix ? `${name}:${literal(prefix)}` : `${name}:*`);
      }
    }
    return tests.length ? `(${tests.join(" OR ")})` : "";
  };
  const query = [part("host", rule.hosts || []), part("app", rule.apps || []), rule.query ? `(${rule.query})` : ""].filter(Boolean).join(" ");
  return { query, exact };
}

export async function preview(rule, now = Date.now()) {
  const { query, exact } = ruleSearch(rule);
  const bounds = { from: now - HOUR_MS, to: now };
  const [counts, sample] = await Promise.all([
    get("/v1/aggregate", { ...bounds, query, top: 0, buckets: 12 }),
    get("/v2/export", { ...bounds, query, size: SAMPLE, prefer: "tail" }),
  ]);
  return { total: counts.total, counted: counts.exact && exact, lines: sample.lines };
}

function ruleForm(rule, done) {
  const title = h("input", { required: true, maxlength: 250, value: rule.title || "", testid: "rule-title" });
  const hosts = h("input", { value: (rule.hosts || []).join(", "), placeholder: "web-*, db-1", testid: "rule-hosts" });
  const apps = h("input", { value: (rule.apps || []).join(", "), placeholder: "nginx", testid: "rule-apps" });
  const query = h("input", { value: rule.query || "", placeholder: "level:debug", testid: "rule-query" });
  const active = h("input", { type: "checkbox", checked: rule.active ?? true, testid: "rule-active" });
  const indexonly = h("input", { type: "checkbox", checked: rule.indexonly ?? true, testid: "rule-indexonly" });
  const result = h("div", { class: "preview", testid: "rule-preview" });
  const problem = h("div", {});
  const body = () => ({
    title: title.value.trim(),
    hosts: splitList(hosts.value),
    apps: splitList(apps.value),
    query: query.value.trim(),
    active: active.checked,
    indexonly: indexonly.checked,
  });
  const previewRule = previewButton("rule-preview-button", result, "Counting the last hour…", async () => {
    const found = await preview(body());
    return [
      h("p", { testid: "rule-preview-count" }, `${found.counted ? "" : "At most "}${formatCount(found.total)} of the last hour's stored lines would have been excluded.`),
      found.lines.length ? h("div", { class: "lines" }, found.lines.map((line) => lineElement(line))) : null,
    ];
  });
  const form = h(
    "form",
    { class: "card rule-form" },
    h("h2", {}, rule.id ? `Edit “${rule.title}”` : "New exclusion rule"),
    field("Title", title),
    field("Hosts", hosts, "comma separated; * matches any run of characters"),
    field("Apps", apps, "comma separated; * matches any run of characters"),
    field("Query", query, "search syntax; lines must match every part given"),
    h("label", { class: "check" }, active, " Active"),
    h("label", { class: "check" }, indexonly, " Preserve these lines for live tail and alerting"),
    formButtons(previewRule, "rule-save", "Save rule", () => done(false)),
    problem,
    result,
  );
  onSubmit(form, problem, async () => {
    if (rule.id) await patch(`${RULES}/${encodeURIComponent(rule.id)}`, body());
    else await post(RULES, body());
    done(true);
  });
  return form;
}

export async function render(main) {
  const canEdit = session.can("manage");
  const editor = h("div", {});
  const table = h("div", {});
  main.append(h("div", { class: "page-head" }, h("h1", {}, "Exclusion rules"), canEdit ? h("button", { type: "button", class: "primary edit", testid: "rule-new", onclick: () => edit({}) }, "New rule") : null), editor, table);

  function edit(rule) {
    clear(editor).append(ruleForm(rule, (saved) => {
      clear(editor);
      if (saved) load();
    }));
  }

  function load() {
    return fillFrom(table, () => get(RULES), (rules) =>
      rules.length
        ? listTable(
            ["Active", "Title", "Hosts", "Apps", "Query", "Kept for tail", ""],
            rules.map((rule) =>
              h(
                "tr",
                { testid: "rule-row" },
                h(
                  "td",
                  {},
                  !canEdit ? (rule.active ? "on" : "off") : h("input", {
                    type: "checkbox",
                    checked: rule.active,
                    "aria-label": "Active",
                    testid: "rule-toggle",
                    onchange: async (event) => {
                      try {
                        await patch(`${RULES}/${encodeURIComponent(rule.id)}`, { active: event.target.checked });
                      } catch (error) {
                        event.target.checked = !event.target.checked;
                        table.prepend(errorBox(error));
                      }
                    },
                  }),
                ),
                h("td", {}, rule.title),
                h("td", {}, (rule.hosts || []).join(", ")),
                h("td", {}, (rule.apps || []).join(", ")),
                h("td", {}, h("code", {}, rule.query || "")),
                h("td", {}, rule.indexonly ? "yes" : "no"),
                h(
                  "td",
                  {},
                  canEdit
                    ? [
                        h("button", { type: "button", class: "edit", onclick: () => edit(rule) }, "Edit"),
                        h("button", { type: "button", class: "edit danger", onclick: async () => { if (confirm(`Delete “${rule.title}”?`)) { await del(`${RULES}/${encodeURIComponent(rule.id)}`).catch((e) => table.prepend(errorBox(e))); load(); } } }, "Delete"),
                      ]
                    : null,
                ),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No exclusion rules: every line is stored."),
    );
  }
  await load();
}
