"""``/docs`` (Swagger UI) and ``/redoc``, with their scripts, styles and icon served by
tidegate itself from the fastapi-offline package: a self-hosted machine without
internet access gets working pages, and no browser is sent to a CDN.

Asset addresses carry a digest of the file (``?v=...``), so they can be cached for a
year: an upgrade that changes a file changes its address."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse, Response

from tidegate.errors import NotFound

DOCS_URL = "/docs"
REDOC_URL = "/redoc"
OAUTH2_REDIRECT_URL = "/docs/oauth2-redirect"
ASSETS_URL = "/docs-assets"

_STATIC_DIR = Path(fastapi_offline.__file__).parent / "static"
_MEDIA_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}
_CACHE_FOREVER = "public, max-age=31536000, immutable"


@dataclass(frozen=True, slots=True)
class _Asset:
    content: bytes
    media_type: str
    version: str


# ReDoc's sidebar shows the vendor's logo from its CDN (an <img> hidden when it fails to
# load): pointed at an empty data URI, so the page asks nothing of another host.
_REWRITES = {"redoc.standalone.js": (b"https://cdn.redoc.ly/redoc/logo-mini.svg", b"data:,")}


@cache
def _asset(name: str) -> _Asset:
    content = (_STATIC_DIR / name).read_bytes()
    if name in _REWRITES:
        content = content.replace(*_REWRITES[name])
    version = hashlib.sha256(content).hexdigest()[:12]
    return _Asset(content=content, media_type=_MEDIA_TYPES[name], version=version)


def _url(request: Request, name: str) -> str:
    root = request.scope.get("root_path", "")
    return f"{root}{ASSETS_URL}/{name}?v={_asset(name).version}"


def build_docs_router(*, title: str, openapi_url: str) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get(DOCS_URL)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{title} - Swagger UI",
            oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT_URL}",
            swagger_js_url=_url(request, "swagger-ui-bundle.js"),
            swagger_css_url=_url(request, "swagger-ui.css"),
            swagger_favicon_url=_url(request, "favicon.png"),
            # No schema validator badge: it would send the document to validator.swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @router.get(OAUTH2_REDIRECT_URL)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @router.get(REDOC_URL)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{title} - ReDoc",
            redoc_js_url=_url(request, "redoc.standalone.js"),
            redoc_favicon_url=_url(request, "favicon.png"),
            with_google_fonts=False,
        )

    @router.get(ASSETS_URL + "/{name}")
    async def asset(name: str) -> Response:
        if name not in _MEDIA_TYPES:
            raise NotFound(f"No documentation asset {name[:100]}")
        found = _asset(name)
        return Response(
            found.content,
            media_type=found.media_type,
            headers={"Cache-Control": _CACHE_FOREVER, "ETag": f'"{found.version}"'},
        )

    return router
