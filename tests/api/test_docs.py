"""/docs and /redoc work without internet access: every script, style and icon they
reference is served by tidegate itself."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

import pytest
from tests.conftest import AppClient

_REFERENCE = re.compile(r"""(?:src|href|spec-url)\s*=\s*["']([^"']+)["']|url:\s*['"]([^'"]+)['"]""")
_ABSOLUTE = re.compile(r"""\b(?:https?:)?//[A-Za-z0-9.-]+""")
_EXPECTED_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".png": "image/png",
    ".json": "application/json",
}


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_docs_pages_reference_only_the_server(client: AppClient, page: str) -> None:
    response = await client.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    # No other host anywhere in the page (CDN scripts, fonts, favicons, validators).
    assert _ABSOLUTE.findall(html) == []
    references = [ref for match in _REFERENCE.findall(html) for ref in match if ref]
    assert any(ref.endswith(".json") for ref in references)  # the OpenAPI document
    assert any(".js" in ref for ref in references)
    for reference in references:
        url = urljoin(f"{client.base_url}{page}", reference)
        assert urlsplit(url).netloc == client.base_url.host
        asset = await client.get(url)
        assert asset.status_code == 200, reference
        suffix = next(s for s in _EXPECTED_TYPES if urlsplit(url).path.endswith(s))
        assert asset.headers["content-type"].startswith(_EXPECTED_TYPES[suffix]), reference
        if "/docs-assets/" in url:
            assert "max-age=31536000" in asset.headers["cache-control"]


async def test_swagger_oauth2_redirect_is_served_locally(client: AppClient) -> None:
    page = (await client.get("/docs")).text
    assert "oauth2RedirectUrl" in page
    redirect = re.search(r"oauth2RedirectUrl:\s*window\.location\.origin \+ '([^']+)'", page)
    assert redirect is not None
    response = await client.get(redirect.group(1))
    assert response.status_code == 200
    assert _ABSOLUTE.findall(response.text) == []


async def test_unknown_docs_asset_is_a_legacy_404(client: AppClient) -> None:
    response = await client.get("/docs-assets/../../etc/passwd")
    assert response.status_code == 404
    response = await client.get("/docs-assets/secret.key")
    assert response.status_code == 404
    assert response.json()["code"] == "NotFound"
