// The account's pipelines, and a new one (for a role that manages pipelines); below
// them, the account's gateway routes (pipeline_routes.js).
import { get, post } from "../api.js";
import { createForm, errorBox, formatTime, h } from "../dom.js";
import { routesSection } from "../pipeline_routes.js";
import { session } from "../session.js";

export async function render(main, { navigate }) {
  main.append(h("h1", {}, "Pipelines"));
  if (session.can("manage")) {
    const title = h("input", { required: true, maxlength: 250, placeholder: "Pipeline title", testid: "pipeline-new-title" });
    main.append(
      createForm({
        label: "New pipeline",
        input: title,
        button: "Create pipeline",
        buttonTestid: "pipeline-create",
        create: async (text) => {
          const pipeline = (await post("/v3/pipeline", { title: text })).data;
          navigate(`/pipelines/${encodeURIComponent(pipeline.id)}`);
        },
      }),
    );
  }
  try {
    const pipelines = (await get("/v3/pipeline")).data || [];
    main.append(
      pipelines.length
        ? h(
            "table",
            { class: "list" },
            h("thead", {}, h("tr", {}, ["Title", "Description", "Revision", "Published", "Updated"].map((t) => h("th", {}, t)))),
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
                  h("td", {}, pipeline.published_revision === null || pipeline.published_revision === undefined ? "never" : `${pipeline.published_revision}${pipeline.has_unpublished_changes ? " (draft changed)" : ""}`),
                  h("td", {}, pipeline.updated_at ? formatTime(Date.parse(pipeline.updated_at)) : ""),
                ),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No pipelines yet."),
    );
    main.append(await routesSection({ canEdit: session.can("manage"), pipelines }));
  } catch (error) {
    main.append(errorBox(error));
  }
}
