// /views/<id>: the address an alert's link carries (with the fired window as `from`
// and `to`, ms): opens the view as a search over that window, or the last 24 hours.
import { ApiError, get } from "../api.js";
import { errorBox, h } from "../dom.js";
import { rangeFromParams } from "../timerange.js";
import { VIEWS } from "../views.js";
import { openUrl } from "./views.js";

export async function render(main, { params, query, navigate }) {
  let view;
  try {
    view = await get(`${VIEWS}/${encodeURIComponent(params.viewid)}`);
  } catch (error) {
    main.append(
      error instanceof ApiError && error.status === 404
        ? h("p", { class: "error", testid: "view-missing" }, "This view does not exist (it may have been deleted), or it is another account's.")
        : errorBox(error),
    );
    return;
  }
  navigate(openUrl(view, rangeFromParams(query)), { replace: true });
}
