"""The web app: one HTML shell for every page, and its scripts, styles and the vendored
chart library, all served from this package (no CDN, no build step; docs/web.md).

The pages are plain JavaScript modules that call the same public HTTP API as every other
client, with the session cookie that ``POST /v1/auth/session`` sets. The shell itself
needs no credentials: it holds no data.

Asset addresses carry a digest of the file (``?v=...``) so they can be cached for a year;
module imports between the scripts are relative, so each module is fetched with the
digest of the shell's release (``/web/<release>/...``): an upgrade changes every
address at once and a browser never mixes two releases' modules."""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from tidegate.errors import NotFound

_HERE = Path(__file__).parent
STATIC_DIR = _HERE / "static"
ASSETS_PREFIX = "/web"

# Every address the app's client-side router knows: each answers the shell, so a
# reload or a shared link opens the same page.
PAGES = (
    "/",
    "/signin",
    "/accept-invitation",  # the links the server e-mails (tidegate.users.service)
    "/reset-password",
    "/search",
    "/views",
    "/views/{viewid}",  # an alert's link (tidegate.alerts.notification.view_link)
    "/boards",
    "/boards/{boardid}",
    "/rules",
    "/parsing",
    "/keys",
    "/usage",
    "/members",
    "/pipelines",
    "/pipelines/{pipeline_id}",
)

_MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    "": "text/plain; charset=utf-8",  # LICENSE
}
# The modules the shell names as `<link rel="modulepreload">`: what asks the search
# page's first lines, the app's entry and the search page (the first page after
# sign-in, and `/`), each with every module it imports statically, so the browser asks
# for them all at once instead of one level of imports after another. In this order,
# each with all it imports before the next: a first visit's browser asks for them in
# the links' order and one server worker answers them about in that order, and
# `search_start.js` asks the first lines only once every module it imports is in.
PRELOADED_MODULES = ("search_start.js", "app.js", "pages/search.js")
# `import ... from "./x.js"`, `export ... from "../x.js"`, `import "./x.js"` (a dynamic
# `import("./x.js")` is not followed: it loads when a page asks).
_STATIC_IMPORT = re.compile(
    r'^\s*(?:(?:import|export)\b[^;"\']*?\bfrom\s*|import\s*)"(\.{1,2}/[^"]+)"', re.MULTILINE
)
_CACHE_FOREVER = "public, max-age=31536000, immutable"
# Scripts and styles from this origin only; uPlot sets element styles from script
# (CSSOM), which 'self' allows, but its legend uses style attributes, hence
# 'unsafe-inline' for styles only. No framing (clickjacking on the edit controls).
_SHELL_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
        "base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True, slots=True)
class _Asset:
    content: bytes
    media_type: str


@cache
def _assets() -> dict[str, _Asset]:
    """Every file under static/, by its path relative to it (read once per process)."""
    found: dict[str, _Asset] = {}
    for path in sorted(STATIC_DIR.rglob("*")):
        if path.is_file() and path.suffix in _MEDIA_TYPES:
            name = path.relative_to(STATIC_DIR).as_posix()
            found[name] = _Asset(path.read_bytes(), _MEDIA_TYPES[path.suffix])
    return found


@cache
def release() -> str:
    """A digest of every asset: the address segment that changes with any of them."""
    digest = hashlib.sha256()
    for name, asset in _assets().items():
        digest.update(name.encode())
        digest.update(hashlib.sha256(asset.content).digest())
    return digest.hexdigest()[:12]


def static_imports(name: str, text: str | None = None) -> list[str]:
    """The modules the module ``name`` (its source ``text``, else the asset's) imports
    statically, by their paths under static/."""
    source = _assets()[name].content.decode() if text is None else text
    folder = posixpath.dirname(name)
    return [
        posixpath.normpath(posixpath.join(folder, found))
        for found in _STATIC_IMPORT.findall(source)
    ]


@cache
def preloaded_modules() -> list[str]:
    """``PRELOADED_MODULES``, each followed by every module it imports statically
    (directly or not) that an earlier one did not: the whole of ``search_start.js``'s
    imports come before any module only the app or the search page needs."""
    found: dict[str, None] = {}
    for root in PRELOADED_MODULES:
        todo = [root]
        while todo:
            name = todo.pop()
            if name not in found:
                found[name] = None
                todo.extend(reversed(static_imports(name)))
    return list(found)


@cache
def _shell() -> str:
    env = Environment(
        loader=FileSystemLoader(_HERE / "templates"), autoescape=select_autoescape(["html"])
    )
    return env.get_template("index.html").render(
        assets=f"{ASSETS_PREFIX}/{release()}", preloads=preloaded_modules()
    )


def build_web_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    async def shell() -> HTMLResponse:
        return HTMLResponse(_shell(), headers=_SHELL_HEADERS)

    for page in PAGES:
        router.add_api_route(page, shell, methods=["GET"])

    @router.get("/favicon.ico")
    async def favicon() -> Response:
        # The shell links the icon by digest; this answers what browsers and tools
        # ask for without reading the page (an SVG, which browsers accept here).
        found = _assets()["favicon.svg"]
        return Response(
            found.content,
            media_type=found.media_type,
            headers={"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"},
        )

    @router.get(ASSETS_PREFIX + "/{version}/{name:path}")
    async def asset(version: str, name: str) -> Response:
        # Any version answers the current file (a page open across an upgrade still
        # loads); only the current one may be cached for good.
        key = PurePosixPath(name).as_posix()
        found = _assets().get(key)
        if found is None:
            raise NotFound(f"No web asset {name[:100]}")
        cache_control = _CACHE_FOREVER if version == release() else "no-cache"
        return Response(
            found.content,
            media_type=found.media_type,
            headers={"Cache-Control": cache_control, "X-Content-Type-Options": "nosniff"},
        )

    return router
