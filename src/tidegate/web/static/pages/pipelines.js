// The account's pipelines (read-only here).
import { get } from "../api.js";
import { errorBox, formatTime, h } from "../dom.js";

export async function render(main) {
  main.append(h("h1", {}, "Pipelines"));
  try {
    const pipelines = (await get("/v3/pipeline")).data || [];
    main.append(
      pipelines.length
        ? h(
            "table",
            { class: "list" },
            h("thead", {}, h("tr", {}, ["Title", "Description", "Revision", "Updated"].map((t) => h("th", {}, t)))),
            h(
              "tbody",
              {},
              pipelines.map((pipeline) =>
                h(
                  "tr",
                  { testid: "pipeline-row" },
                  h("td", {}, h("a", { href: `/pipelines/${encodeURIComponent(pipeline.id)}` }, pipeline.title)),
                  h("td", {}, pipeline.description || ""),
                  h("td", {}, String(pipeline.revision ?? "")),
                  h("td", {}, pipeline.updated_at ? formatTime(Date.parse(pipeline.updated_at)) : ""),
                ),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No pipelines yet (they are built through the /v3/pipeline API)."),
    );
  } catch (error) {
    main.append(errorBox(error));
  }
}
