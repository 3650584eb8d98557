// Boards: the account's boards, and a new one.
import { get, post } from "../api.js";
import { createForm, errorBox, h } from "../dom.js";
import { session } from "../session.js";

export async function render(main, { navigate }) {
  main.append(h("h1", {}, "Boards"));
  const box = h("div", {});
  if (session.can("content")) {
    const title = h("input", { required: true, maxlength: 250, placeholder: "Board title", testid: "board-title" });
    main.append(
      createForm({
        label: "New board",
        input: title,
        button: "Create board",
        buttonTestid: "board-create",
        create: async (text) => {
          const board = await post("/v1/config/board", { title: text, graphs: [] });
          navigate(`/boards/${encodeURIComponent(board.boardid)}`);
        },
      }),
    );
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
