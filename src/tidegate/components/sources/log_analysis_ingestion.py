"""The ``log-analysis-ingestion`` source: the lines the account ingests
(``POST /logs/ingest``, ``/logs/agent``) also enter the pipeline.

After ingestion commits (and answers), the stored lines and the ``indexonly`` ones
(lines an exclusion rule dropped entirely do not flow) become events of the account's
pipelines that have this source, in the background: ingestion's answer never waits for
a pipeline, and a pipeline that fails does not fail ingestion (it is logged; the lines
are stored already). Each line is the event ``{line, timestamp, host, app, level, env,
file, ip, mac, tags, meta}`` (fields the line does not have are left out).

Bounds, per worker: at most ``MAX_FEEDS`` batches in flight; past it a batch does not
flow (counted in ``IngestionFeed.skipped`` and logged). Which accounts have such a
pipeline is cached for ``ACCOUNT_TTL_S`` (a new pipeline starts receiving within that).
No options; no gateway route.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, NodeRef
from tidegate.logs.store import NewLine

__all__ = [
    "ACCOUNT_TTL_S",
    "COMPONENT",
    "MAX_FEEDS",
    "NAMES",
    "TYPE",
    "LogAnalysisIngestionConfig",
    "line_events",
]

TYPE: Final = "log-analysis-ingestion"
MAX_FEEDS: Final = 16
ACCOUNT_TTL_S: Final = 2.0


class LogAnalysisIngestionConfig(BaseModel):
    """No options."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def line_events(lines: Iterable[NewLine]) -> list[dict[str, Any]]:
    events = []
    for line in lines:
        event: dict[str, Any] = {"line": line.line, "timestamp": line.ts, "host": line.host}
        for name in ("app", "level", "env", "file", "ip", "mac", "tags", "meta"):
            value = getattr(line, name)
            if value is not None:
                event[name] = value
        if line.meta_unindexed is not None:
            # An event has one meta: the line's meta as shown (unindexed is a store's
            # notion; a pipeline sees what the sender sent).
            event["meta"] = {**line.meta_unindexed, **(line.meta or {})}
        events.append(event)
    return events


def _build(_config: LogAnalysisIngestionConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[LogAnalysisIngestionConfig] = Component(
    kind="source",
    type="log-analysis-ingestion",
    config_model=LogAnalysisIngestionConfig,
    build=_build,
    describe="The lines the account ingests at /logs/ingest, after they are stored",
    # The provider's mezmo_log_analysis_source ("data directly from your Log Analysis
    # account"): the same lines, stored under the name it was sent with.
    aliases=("log-analysis",),
)

NAMES: Final = COMPONENT.names
"""The type and its aliases: what a node of this source may be stored as."""
