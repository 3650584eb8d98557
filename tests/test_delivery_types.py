"""One pair of delivery types: `tidegate.delivery.DeliveryFailed` is the failure both the
pipeline destinations and the alert integrations raise, and `DeliveryContext` names only
the pipeline destinations' context (an integration's is `SendContext`)."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import httpx
import pytest
from tests.alerts.receivers import HttpReceiver

import tidegate
from tidegate.alerts.integrations.base import post_json
from tidegate.components.destinations.http_sender import OutboundSender
from tidegate.components.destinations.wire import WireRequest
from tidegate.delivery import DeliveryFailed

PACKAGE = Path(tidegate.__file__).parent


def _classes_named(name: str) -> list[str]:
    return [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name == name
    ]


@pytest.mark.parametrize(
    ("name", "home"),
    [("DeliveryFailed", "delivery.py"), ("DeliveryContext", "components/base.py")],
)
def test_each_delivery_type_is_defined_once(name: str, home: str) -> None:
    assert _classes_named(name) == [home]


async def test_an_alert_channel_and_a_pipeline_destination_raise_the_same_failure() -> None:
    async with HttpReceiver([400]) as receiver, httpx.AsyncClient() as client:
        with pytest.raises(DeliveryFailed) as alert:
            await post_json(client, f"{receiver.base_url}/hook", body={"a": 1}, timeout_s=60)
        sender = OutboundSender(
            client=client,
            name="http",
            concurrency=1,
            timeout_s=60,
            max_retries=0,
            backoff_base_ms=1,
            backoff_cap_ms=1,
        )
        request = WireRequest("POST", f"{receiver.base_url}/in", (), b"{}")
        with pytest.raises(DeliveryFailed) as pipeline:
            await sender.send_all([request], deadline=asyncio.get_running_loop().time() + 60)
    assert [request.path for request in receiver.requests] == ["/hook", "/in"]
    # A 400 is final for a notification; the gateway's sender retries a request whole.
    assert alert.value.retry is False
    assert pipeline.value.retry is True
