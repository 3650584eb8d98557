"""The ``kinesis-firehose`` source: an Amazon Kinesis Data Firehose *HTTP endpoint*
destination pointed at the source's gateway route (``POST /gateway/{id}``).

The request is Firehose's documented delivery request: headers
``X-Amz-Firehose-Request-Id`` and ``X-Amz-Firehose-Access-Key`` (an access key of the
route: the gateway takes it as the credential), a JSON body ``{"requestId": "...",
"timestamp": <epoch ms>, "records": [{"data": "<base64>"}, ...]}``. The answer is
Firehose's ``{"requestId": "<the same>", "timestamp": <epoch ms>}``; anything but a 200
makes Firehose retry the whole request.

Each record is one event. ``format`` (the provider's ``decoding``): ``json`` (default)
parses the decoded data when it is a JSON object (the event itself) and keeps any other
data as ``{"message": "<text>"}``; ``text`` always gives ``{"message": "<text>"}``.
"""

from __future__ import annotations

import binascii
import json
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from tidegate.clock import now_ms
from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.push import ROUTE_ITSELF, Push, Received
from tidegate.errors import BadRequest, PayloadTooLarge
from tidegate.kit.body import MAX_EVENTS, checked_event

__all__ = ["COMPONENT", "KinesisFirehoseConfig", "firehose_events", "receive"]

REQUEST_ID_HEADER: Final = "x-amz-firehose-request-id"


class KinesisFirehoseConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["json", "text"] = "json"


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").replace("\x00", "\ufffd")


def _event(data: bytes, form: str, number: int) -> dict[str, Any]:
    if form == "json" and data.lstrip()[:1] == b"{":
        try:
            value = json.loads(data)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            return checked_event(value, f"Firehose record {number}", check_strings=True)
    return {"message": _text(data)}


def firehose_events(body: bytes, *, form: str) -> tuple[str, list[dict[str, Any]]]:
    """The request id and the events of a delivery request (CPU work: call from a
    worker thread)."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        raise BadRequest("A Firehose delivery request must be a JSON object") from None
    if not isinstance(request, dict) or not isinstance(request.get("records"), list):
        raise BadRequest('A Firehose delivery request needs "records": [{"data": ...}]')
    request_id = request.get("requestId")
    records: list[Any] = request["records"]
    if len(records) > MAX_EVENTS:
        raise PayloadTooLarge(f"More than {MAX_EVENTS} records in one request")
    events = []
    for number, record in enumerate(records, start=1):
        data = record.get("data") if isinstance(record, dict) else None
        if not isinstance(data, str):
            raise BadRequest(f'Firehose record {number} needs a base64 string "data"')
        try:
            raw = binascii.a2b_base64(data, strict_mode=True)
        except binascii.Error:
            raise BadRequest(f"Firehose record {number}: data is not base64") from None
        events.append(_event(raw, form, number))
    return (request_id if isinstance(request_id, str) else ""), events


def receive(config: KinesisFirehoseConfig, push: Push) -> Received:
    request_id, events = firehose_events(push.body, form=config.format)
    answer = {
        "requestId": request_id or push.headers.get(REQUEST_ID_HEADER, ""),
        "timestamp": now_ms(),
    }
    return Received(events, answer=json.dumps(answer).encode(), media_type="application/json")


def _build(_config: KinesisFirehoseConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[KinesisFirehoseConfig] = Component(
    kind="source",
    type="kinesis-firehose",
    config_model=KinesisFirehoseConfig,
    build=_build,
    describe="Amazon Kinesis Data Firehose HTTP endpoint delivery to the gateway route "
    "(`X-Amz-Firehose-Access-Key: <access key>`; `format`: json, text)",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=frozenset({ROUTE_ITSELF}),
)
