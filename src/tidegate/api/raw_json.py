"""Reads answered as JSON bytes built straight from plain data with orjson.

A read route declares its response model (``response_model=``: the OpenAPI document
describes it as before) and returns ``json_response(data)``: FastAPI passes a Response
through untouched, so no model is built, validated or dumped on the request. The plain
data comes from the same builder that makes the model for the writes (``rule_data``
beside ``rule_schema = ExclusionRule(**rule_data(...))``, and so on), so the two
renderings cannot drift apart; tests/api/test_raw_reads.py compares every such route's
body byte for byte with the model's rendering on both backends. (A 20-row list: the
models and FastAPI's response handling cost about 170 us, plain dicts and orjson 7 us.)
"""

from __future__ import annotations

from typing import Any

import orjson
import pydantic_core
from fastapi.responses import Response

from tidegate.api.envelope import SelfLinks, envelope


def json_response(document: Any) -> Response:
    """``document`` (dicts, lists, str, int, bool, None, aware UTC datetimes) as the JSON
    FastAPI would answer for it through a response model (``Z`` for UTC, as pydantic).
    orjson writes no integer beyond 64 bits (free-form JSON may hold one: a board's
    graphs); such a document is written by pydantic's own serialiser, as before."""
    try:
        body = orjson.dumps(document, option=orjson.OPT_UTC_Z)
    except orjson.JSONEncodeError:
        body = pydantic_core.to_json(document)
    return Response(body, media_type="application/json")


def envelope_meta(
    *, type: str, pk: str | None, links: SelfLinks, related: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The v3 envelope's ``meta`` as plain data (build it once, at import)."""
    return envelope(None, type=type, pk=pk, links=links, related=related).meta.model_dump(
        mode="json"
    )


def enveloped(meta: dict[str, Any], data: Any) -> Response:
    """``{meta, data}`` as JSON bytes (``meta`` from ``envelope_meta``)."""
    return json_response({"meta": meta, "data": data})
