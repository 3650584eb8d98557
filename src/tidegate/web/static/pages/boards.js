// Boards: the account's boards, and a new one.
import { get, post } from "../api.js";
import { clear, errorBox, field, h } from "../dom.js";
import { session } from "../session.js";

export async function render(main, { navigate }) {
  main.append(h("h1", {}, "Boards"));
  const box = h("div", {});
  if (session.can("content")) {
    const title = h("input", { required: true, maxlength: 250, placeholder: "Board title", testid: "board-title" });
    const problem = h("div", {});
    const form = h("form", { class: "inline-form edit" }, field("New board", title), h("button", { type: "submit", class: "primary", testid: "board-create" }, "Create board"), problem);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clear(problem);
      try {
        const board = await post("/v1/config/board", { title: title.value.trim(), graphs: [] });
        navigate(`/boards/${encodeURIComponent(board.boardid)}`);
      } catch (error) {
        problem.append(errorBox(error));
      }
    });
    main.append(form);
  }
  main.append(box);
  try {
    const boards = (await get("/v1/config/board")) || [];
    box.append(
      boards.length
        ? h(
            "ul",
            { class: "rows" },
            boards.map((board) => h("li", { class: "row" }, h("a", { href: `/boards/${encodeURIComponent(board.boardid)}` }, board.title))),
          )
        : h("p", { class: "muted" }, "No boards yet."),
    );
  } catch (error) {
    box.append(errorBox(error));
  }
}
