"""The shell's own files, in process (no browser, no server process): the favicon and
the alert links' page address."""

from __future__ import annotations

import itertools
import re

from tests.conftest import AppClient

from tidegate.web.endpoints import preloaded_modules, release, static_imports


async def test_the_favicon_is_served_from_the_package(client: AppClient) -> None:
    shell = await client.get("/search")
    linked = f'<link rel="icon" href="/web/{release()}/favicon.svg" type="image/svg+xml">'
    assert linked in shell.text
    for path in (f"/web/{release()}/favicon.svg", "/favicon.ico"):
        icon = await client.get(path)
        assert icon.status_code == 200, path
        assert icon.headers["content-type"] == "image/svg+xml"
        assert icon.content.startswith(b"<svg")


async def test_an_alert_links_address_answers_the_shell(client: AppClient) -> None:
    page = await client.get("/views/3f6c0a9e?from=1&to=2")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


async def test_the_shell_preloads_the_search_pages_modules(client: AppClient) -> None:
    shell = (await client.get("/search")).text
    preloaded = re.findall(r'<link rel="modulepreload" href="/web/[0-9a-f]+/([^"]+)">', shell)
    assert preloaded == preloaded_modules()
    # Everything they import statically, each once; the pages loaded on demand
    # (`import("./pages/...")`) are not.
    assert len(set(preloaded)) == len(preloaded)
    roots = ["search_start.js", "app.js", "pages/search.js"]
    assert set(preloaded) == set().union(*map(imported_by, roots))
    # Each root after all that the one before it imports: a first visit asks for them
    # in this order, and the first lines are asked once search_start.js's are all in.
    assert preloaded[0] == "search_start.js"
    for earlier, later in itertools.pairwise(roots):
        assert imported_by(earlier) <= set(preloaded[: preloaded.index(later)]), earlier
    assert {"search_start.js", "timerange.js", "views.js", "copy.js"} <= set(preloaded)
    assert "pages/views.js" not in preloaded
    for name in preloaded:
        assert (await client.get(f"/web/{release()}/{name}")).status_code == 200, name
    # The same shell, with the same links, on every page address.
    assert (await client.get("/pipelines")).text == shell


def imported_by(name: str) -> set[str]:
    """``name`` and every module it imports statically, directly or not."""
    found = {name}
    todo = [name]
    while todo:
        for imported in static_imports(todo.pop()):
            if imported not in found:
                found.add(imported)
                todo.append(imported)
    return found


def test_static_imports_reads_every_form_and_resolves_relative_paths() -> None:
    source = """// import { no } from "./a-comment.js";
import { a,
  b } from "../multi.js";
import "./side.js";
export { c } from "./again.js";
export * from "../all.js";
const later = () => import("./later.js");
const text = "import x from './not-code.js'";
"""
    assert static_imports("pages/x.js", source) == [
        "multi.js",
        "pages/side.js",
        "pages/again.js",
        "all.js",
    ]
    assert static_imports("pages/search.js")[:3] == ["api.js", "chart.js", "completion.js"]
    assert "search_start.js" in static_imports("app.js")
    assert not any(name.startswith("pages/") for name in static_imports("app.js"))
