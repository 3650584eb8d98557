"""The shell's own files, in process (no browser, no server process): the favicon and
the alert links' page address."""

from __future__ import annotations

from tests.conftest import AppClient

from tidegate.web.endpoints import release


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
