"""What a channel is told when an alert fires or resolves, and the webhook template
placeholders filled from it (docs/alerts.md lists them)."""

from __future__ import annotations

import json
import re
import zoneinfo
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

MAX_MATCHES = 10
# A placeholder: {{name}} with optional spaces inside the braces, or {{.path.to.field}}
# (a field of a pipeline alert's aggregate, as the platform's templates name them).
_PLACEHOLDER = re.compile(r"\{\{\s*(\.?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\}\}")


def app_link(
    public_url: str, path: str, *, account_id: str, params: dict[str, int] | None = None
) -> str:
    """The web app's address of ``path`` in an account, built from
    ``TIDEGATE_PUBLIC_URL``. ``account`` names the account: a person in several (or a
    browser signed in with an enterprise key) may be working in another one, and the
    app switches to it before drawing the page."""
    query = urlencode({"account": account_id, **(params or {})})
    return f"{public_url.rstrip('/')}{path}?{query}"


def view_link(public_url: str, view_id: str, *, account_id: str, from_ms: int, to_ms: int) -> str:
    """A view over an alert's window (``/views/<id>`` opens the view's search with
    ``from`` and ``to``, in ms, both included)."""
    path = f"/views/{quote(view_id, safe='')}"
    return app_link(public_url, path, account_id=account_id, params={"from": from_ms, "to": to_ms})


@dataclass(slots=True)
class Notification:
    """``event``: ``trigger`` or ``resolve``. ``matches``: up to MAX_MATCHES of the
    lines that made it fire (the export's record shape), ``count`` all of them."""

    event: str
    source: str  # "view" or "index-rate"
    account_id: str
    name: str
    fired_ms: int
    count: int
    operator: str = ""
    triggerlimit: int = 0
    triggerinterval: str = ""
    view_id: str = ""
    query: str = ""
    matches: list[dict[str, Any]] = field(default_factory=list)
    detail: str = ""
    url: str = ""
    alert_id: str = ""  # a pipeline alert's id (its PagerDuty incident's key)
    # A pipeline alert's aggregate ({"event_count", "byte_count"}): ``{{.event_count}}``.
    aggregate: dict[str, Any] | None = None

    def as_payload(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "source": self.source,
            "account_id": self.account_id,
            "name": self.name,
            "fired_ms": self.fired_ms,
            "count": self.count,
            "operator": self.operator,
            "triggerlimit": self.triggerlimit,
            "triggerinterval": self.triggerinterval,
            "view_id": self.view_id,
            "query": self.query,
            "matches": self.matches,
            "detail": self.detail,
            "url": self.url,
            # Only where set: a row of a view's firing stays readable by a worker of
            # the release before (its ``from_payload`` takes only the keys it knew).
            **({"alert_id": self.alert_id} if self.alert_id else {}),
            **({"aggregate": self.aggregate} if self.aggregate is not None else {}),
        }

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> Notification:
        """A stored payload; keys of a later release are left out (a rolling upgrade
        may leave its rows to a worker of this one)."""
        return cls(**{name: value for name, value in data.items() if name in _FIELDS})

    def service_text(self, channel_parts: dict[str, Any] | None, name: str, timezone: str) -> str:
        """A text a pipeline alert's service sets (``message_text``, ``summary``,
        ``subject``...: kept in its channel's ``body_template``) with placeholders
        filled; "" when it sets none."""
        text = (channel_parts or {}).get(name)
        if not text:
            return ""
        return str(render_template(str(text), self.placeholders(timezone)))

    def time_text(self, timezone: str) -> str:
        zone = zoneinfo.ZoneInfo(timezone) if timezone else UTC
        return datetime.fromtimestamp(self.fired_ms / 1000, UTC).astimezone(zone).isoformat()

    def summary(self, timezone: str = "") -> str:
        """One human sentence (Slack text, e-mail subject, PagerDuty summary)."""
        if self.source == "index-rate":
            return f"Index rate alert: {self.detail}"
        if self.source == "pipeline":
            return f"Pipeline alert '{self.name}': {self.detail}"
        if self.event == "resolve":
            return f"Resolved: view '{self.name}' is back to normal"
        if self.operator == "absence":
            return (
                f"Absence alert: view '{self.name}' matched {self.count} lines "
                f"(fewer than {self.triggerlimit}) in {self.triggerinterval}"
            )
        return (
            f"Alert: view '{self.name}' matched {self.count} lines "
            f"(limit {self.triggerlimit} in {self.triggerinterval})"
        )

    def lines_text(self) -> str:
        return "\n".join(str(item.get("_line", item.get("line", ""))) for item in self.matches)

    def placeholders(self, timezone: str) -> dict[str, Any]:
        """Placeholder name -> value. A template string that is exactly one
        placeholder takes the value itself (``"{{lines}}"`` becomes a JSON array);
        inside longer text each becomes its text."""
        first = self.matches[0] if self.matches else {}
        return {
            "name": self.name,
            "viewID": self.view_id,
            "query": self.query,
            "event": self.event,
            "operator": self.operator,
            "count": self.count,
            "triggerlimit": self.triggerlimit,
            "triggerinterval": self.triggerinterval,
            "time": self.time_text(timezone),
            "timestamp": self.fired_ms,
            "lines": self.matches,
            "matches": self.lines_text(),
            "firstLine": first.get("_line", ""),
            "host": first.get("_host", ""),
            "app": first.get("_app", ""),
            "level": first.get("level", ""),
            "url": self.url,
            "summary": self.summary(timezone),
            "account": self.account_id,
            **_paths(self.aggregate or {}, "."),
        }


_FIELDS = frozenset(item.name for item in fields(Notification))


_MAX_PATH_DEPTH = 16


def _paths(value: dict[str, Any], prefix: str, depth: int = 0) -> dict[str, Any]:
    """``{".a": ..., ".a.b": ...}``: every field of ``value`` by its path (fields
    nested deeper than ``_MAX_PATH_DEPTH`` are named by their parent only)."""
    found: dict[str, Any] = {}
    for key, item in value.items():
        path = f"{prefix}{key}"
        found[path] = item
        if isinstance(item, dict) and depth < _MAX_PATH_DEPTH:
            found.update(_paths(item, f"{path}.", depth + 1))
    return found


def render_template(template: Any, values: dict[str, Any]) -> Any:
    """``template`` (any JSON value) with placeholders in its strings (keys too) filled
    in; unknown placeholders are left as they are. Linear in the template's size."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template.strip())
        if whole and whole.group(1) in values:
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: _text(values, m), template)
    if isinstance(template, dict):
        return {
            str(render_template(key, values)): render_template(item, values)
            for key, item in template.items()
        }
    if isinstance(template, list):
        return [render_template(item, values) for item in template]
    return template


def _text(values: dict[str, Any], match: re.Match[str]) -> str:
    name = match.group(1)
    if name not in values:
        return match.group(0)
    value = values[name]
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))
