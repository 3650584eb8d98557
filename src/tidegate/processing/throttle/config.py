"""`ThrottleConfig`: the Throttle processor's `user_config`, validated once."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tidegate.processing.conditions import Condition
from tidegate.processing.fields import FieldPath, FieldPathError

__all__ = [
    "DEFAULT_MAX_KEYS",
    "MAX_THRESHOLD",
    "MAX_WINDOW_MS",
    "ThrottleConfig",
    "WindowUnit",
    "describe_validation_error",
    "window_ms_from",
]

DEFAULT_MAX_KEYS: Final = 20_000
MAX_THRESHOLD: Final = 1_000_000_000
MAX_WINDOW_MS: Final = 30 * 24 * 3_600_000  # 30 days
_MAX_KEYS_LIMIT: Final = 10_000_000


class WindowUnit(StrEnum):
    """The units the UI offers for Window."""

    MILLISECONDS = "Milliseconds"
    SECONDS = "Seconds"
    MINUTES = "Minutes"
    HOURS = "Hours"


_UNIT_MS: Final = {
    WindowUnit.MILLISECONDS: 1,
    WindowUnit.SECONDS: 1_000,
    WindowUnit.MINUTES: 60_000,
    WindowUnit.HOURS: 3_600_000,
}


def window_ms_from(amount: int | float, unit: WindowUnit | str) -> int:
    """Convert the UI's Window (amount and unit, e.g. 1.5 Seconds) to `window_ms`."""
    try:
        window_unit = WindowUnit(unit)
    except ValueError:
        choices = ", ".join(member.value for member in WindowUnit)
        raise ValueError(f"window unit must be one of {choices}, not {unit!r}") from None
    if isinstance(amount, bool) or not isinstance(amount, int | float) or amount <= 0:
        raise ValueError("window amount must be a positive number")
    window_ms = round(amount * _UNIT_MS[window_unit])
    if window_ms < 1:
        raise ValueError("window must be at least 1 millisecond")
    return window_ms


class ThrottleConfig(BaseModel):
    """Configuration of a Throttle processor.

    The first four fields are the platform's wire form; the rest are tidegate's
    extensions, all optional.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    threshold: Annotated[int, Field(strict=True, ge=1, le=MAX_THRESHOLD)]
    """Events allowed per window in each bucket (Limit)."""
    window_ms: Annotated[int, Field(strict=True, ge=1, le=MAX_WINDOW_MS)]
    """Length of the sliding window in milliseconds."""
    key_field: str | None = None
    """Event path whose value picks the bucket; blank or null means one global bucket."""
    exclude: Condition | None = None
    """Events matching this condition always pass and use no slot."""

    time_field: str | None = None
    """Event path of a timestamp (epoch ms or RFC 3339) to throttle by event time."""
    max_keys: Annotated[int, Field(strict=True, ge=1, le=_MAX_KEYS_LIMIT)] = DEFAULT_MAX_KEYS
    """Distinct keys tracked at once; events of further new keys pass (fail open)."""
    reroute_dropped: Annotated[bool, Field(strict=True)] = False
    """Send discarded events to the second output `dropped` instead of discarding them."""
    discarded_per_key: Annotated[bool, Field(strict=True)] = False
    """Keep a discarded-events count per key (opt-in)."""
    discarded_per_key_limit: Annotated[int, Field(strict=True, ge=1, le=100_000)] = 1_000
    """Most keys that get their own discarded count; the rest are added up together."""

    @field_validator("key_field", "time_field", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("key_field", "time_field")
    @classmethod
    def _valid_path(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                FieldPath.parse(value)
            except FieldPathError as error:
                raise ValueError(str(error)) from None
        return value

    @property
    def key_path(self) -> FieldPath | None:
        return None if self.key_field is None else FieldPath.parse(self.key_field)

    @property
    def time_path(self) -> FieldPath | None:
        return None if self.time_field is None else FieldPath.parse(self.time_field)

    def with_time_field(self, time_field: str | None) -> ThrottleConfig:
        """A copy switched to event time on `time_field` (validated like the original)."""
        data = self.model_dump()
        data["time_field"] = time_field
        return ThrottleConfig.model_validate(data)


def describe_validation_error(error: ValidationError) -> str:
    """One line per problem, each naming the field: `threshold: must be ...`."""
    lines = []
    for item in error.errors(include_url=False):
        location = ".".join(str(part) for part in item["loc"]) or "config"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "missing":
            message = "required field is missing"
        message = message.removeprefix("Value error, ")
        lines.append(f"{location}: {message}")
    return "\n".join(lines)
