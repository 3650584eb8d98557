"""Type aliases shared across domains. Imports nothing from tidegate, so it is never in a cycle."""

from typing import Any, Literal, TypeAlias

JSONObject: TypeAlias = dict[str, Any]
AccountStatus: TypeAlias = Literal["active", "deactivated", "pending"]
KeyKind: TypeAlias = Literal["enterprise", "service", "ingestion"]
ApiFamily: TypeAlias = Literal["v3", "legacy"]
