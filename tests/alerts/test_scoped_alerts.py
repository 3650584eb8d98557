"""A view's alerts send only the lines its maker may see now (docs/isolation.md): a
member whose group limits them to ``apps: ["web"]`` gets no ``secretapp`` line by any
channel of a view they make (the exfiltration of issue 21), narrowing their group or
removing them from the account takes effect for their existing alerts, and a preset
alert they change sends only what both the view's maker and they may see. Real
receivers: an SMTP server and an HTTP webhook receiver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.alerts.harness import VIEWS, Harness, mailing, open_harness
from tests.alerts.receivers import HttpReceiver, SmtpReceiver
from tests.users.factories import add_person, sign_in_person


def _channel(**fields: Any) -> dict[str, Any]:
    return {"triggerlimit": 1, "immediate": "true", "triggerinterval": "30", **fields}


async def _person(harness: Harness, group_apps: list[str] | None) -> tuple[str, dict[str, str]]:
    """A member (in a group limited to ``group_apps`` when given): e-mail, browser headers."""
    person = await add_person(
        harness.client.database_url, account_id=harness.who.account.account_id
    )
    if group_apps is not None:
        await _place(harness, person.email, group_apps)
    browser = await sign_in_person(harness.client, person)
    return person.email, browser.headers


async def _place(harness: Harness, email: str, apps: list[str]) -> str:
    owner = harness.who.account.headers
    group = await harness.client.post(
        "/v1/config/groups", json={"name": f"only {apps}", "apps": apps}, headers=owner
    )
    assert group.status_code == 200, group.text
    placed = await harness.client.put(
        f"/v1/config/members/{email}", json={"groups": [group.json()["id"]]}, headers=owner
    )
    assert placed.status_code == 200, placed.text
    return str(group.json()["id"])


async def _view(harness: Harness, headers: dict[str, str], **body: Any) -> str:
    response = await harness.client.post(VIEWS, json={"name": "v", **body}, headers=headers)
    assert response.status_code == 200, response.text
    return str(response.json()["viewID"])


async def _round(harness: Harness, *batches: tuple[str, str]) -> int:
    """Lines ingested (text, app), then evaluated; the number of firings."""
    evaluator = harness.main_evaluator()
    harness.clock.move(60)  # past the last round's trigger interval
    await evaluator.evaluate()
    for text, app in batches:
        await harness.ingest(text, app=app)
    harness.clock.move(1)
    return (await evaluator.evaluate()).firings


def _hooked_lines(receiver: HttpReceiver) -> list[str]:
    return sorted(
        line["_line"] for request in receiver.requests for line in request.json()["lines"]
    )


async def test_a_scoped_members_alerts_send_only_their_scope(
    own_database: str, tmp_path: Path
) -> None:
    with SmtpReceiver() as smtp:
        async with HttpReceiver() as receiver:
            harness = await open_harness(own_database, tmp_path, **mailing(smtp.port))
            try:
                _, scoped = await _person(harness, ["web"])
                hook = {"integration": "webhook", "url": f"{receiver.base_url}/a"}
                mail = {"integration": "email", "emails": ["outside@example.com"]}
                template = {"bodyTemplate": {"lines": "{{lines}}"}}
                await _view(
                    harness, scoped, query="app:secretapp", channels=[_channel(**hook, **template)]
                )
                await _view(harness, scoped, query="app:secretapp", channels=[_channel(**mail)])
                # Everything (no query): still only the member's scope.
                await _view(harness, scoped, channels=[_channel(**hook, **template)])
                await _round(harness, ("secret: card 4111", "secretapp"), ("web ok", "web"))
                await harness.outbox().deliver_due()
                assert _hooked_lines(receiver) == ["web ok"]
                sent = [
                    message
                    for _, recipients, message in smtp.messages
                    if "outside@example.com" in recipients
                ]
                assert sent == []
            finally:
                await harness.close()


async def test_narrowing_or_leaving_takes_effect_for_existing_alerts(
    own_database: str, tmp_path: Path
) -> None:
    async with HttpReceiver() as receiver:
        harness = await open_harness(own_database, tmp_path)
        try:
            email, headers = await _person(harness, None)
            hook = {"integration": "webhook", "url": f"{receiver.base_url}/a"}
            await _view(
                harness,
                headers,
                query="secret",
                channels=[_channel(**hook, bodyTemplate={"lines": "{{lines}}"}, triggerlimit=1)],
            )
            # In no group: every line of the account.
            assert await _round(harness, ("secret one", "secretapp")) == 1
            # Placed in a group limited to web: the existing alert follows at once.
            await _place(harness, email, ["web"])
            assert await _round(harness, ("secret two", "secretapp")) == 0
            assert await _round(harness, ("secret web", "web")) == 1
            # Removed from the account: their alerts stop.
            owner = harness.who.account.headers
            removed = await harness.client.delete(f"/v1/config/members/{email}", headers=owner)
            assert removed.status_code == 200, removed.text
            assert await _round(harness, ("secret web again", "web")) == 0
            await harness.outbox().deliver_due()
            assert _hooked_lines(receiver) == ["secret one", "secret web"]
        finally:
            await harness.close()


async def test_a_preset_changed_by_a_scoped_member_sends_only_their_scope(
    own_database: str, tmp_path: Path
) -> None:
    async with HttpReceiver() as receiver:
        harness = await open_harness(own_database, tmp_path)
        try:
            owner = harness.who.account.headers
            _, scoped = await _person(harness, ["web"])
            preset = await harness.client.post(
                "/v1/config/presetalert",
                json={"name": "p", "channels": [_channel(integration="email", emails=["o@x.y"])]},
                headers=owner,
            )
            assert preset.status_code == 200, preset.text
            preset_id = preset.json()["presetid"]
            # The owner's view of every line uses the preset...
            await _view(harness, owner, query="secret", presetid=preset_id)
            # ...which the scoped member points at their own webhook.
            hook = {"integration": "webhook", "url": f"{receiver.base_url}/p"}
            changed = await harness.client.put(
                f"/v1/config/presetalert/{preset_id}",
                json={
                    "name": "p",
                    "channels": [_channel(**hook, bodyTemplate={"lines": "{{lines}}"})],
                },
                headers=scoped,
            )
            assert changed.status_code == 200, changed.text
            await _round(harness, ("secret one", "secretapp"), ("secret web", "web"))
            await harness.outbox().deliver_due()
            assert _hooked_lines(receiver) == ["secret web"]
        finally:
            await harness.close()


async def test_a_delivery_log_shows_its_reader_only_the_lines_of_their_scope(
    own_database: str, tmp_path: Path
) -> None:
    """An owner's view fires on lines of two apps; the log of that firing shows both to
    the owner and only the web line to a member whose group holds only web."""
    async with HttpReceiver() as receiver:
        harness = await open_harness(own_database, tmp_path)
        try:
            _, scoped = await _person(harness, ["web"])
            owner = harness.who.account.headers
            hook = {"integration": "webhook", "url": f"{receiver.base_url}/a"}
            # Fires at once on the second matching line: both are kept.
            channel = _channel(**hook, triggerlimit=2)
            view_id = await _view(harness, owner, query="card", channels=[channel])
            evaluator = harness.main_evaluator()
            await evaluator.evaluate()
            # One request: both lines are in the batch the alert fires on.
            sent = await harness.client.post(
                "/logs/ingest",
                params={"hostname": "web-1"},
                json={
                    "lines": [
                        {"line": "card 4111 secret", "app": "secretapp"},
                        {"line": "card ok", "app": "web"},
                    ]
                },
                headers=harness.who.headers,
            )
            assert sent.status_code == 200, sent.text
            harness.clock.move(1)
            assert (await evaluator.evaluate()).firings == 1
            await harness.outbox().deliver_due()

            async def log(headers: dict[str, str]) -> list[dict[str, Any]]:
                response = await harness.client.get(f"{VIEWS}/{view_id}/alerts", headers=headers)
                assert response.status_code == 200, response.text
                return list(response.json())

            [seen_by_owner] = await log(owner)
            assert sorted(line["_line"] for line in seen_by_owner["lines"]) == [
                "card 4111 secret",
                "card ok",
            ]
            assert seen_by_owner["count"] == 2
            [seen_by_member] = await log(scoped)
            assert [line["_line"] for line in seen_by_member["lines"]] == ["card ok"]
            assert seen_by_member["count"] == 1
            assert "secret" not in json.dumps(seen_by_member)
        finally:
            await harness.close()
