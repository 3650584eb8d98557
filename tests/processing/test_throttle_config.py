from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tidegate.processing.conditions import Condition
from tidegate.processing.throttle import (
    DEFAULT_MAX_KEYS,
    ThrottleConfig,
    WindowUnit,
    describe_validation_error,
    window_ms_from,
)


def test_wire_form_with_defaults() -> None:
    config = ThrottleConfig.model_validate({"threshold": 5, "window_ms": 1000})
    assert config.threshold == 5
    assert config.window_ms == 1000
    assert config.key_field is None
    assert config.exclude is None
    assert config.time_field is None
    assert config.max_keys == DEFAULT_MAX_KEYS == 20_000
    assert config.reroute_dropped is False
    assert config.discarded_per_key is False


def test_exclude_is_compiled_once_at_validation() -> None:
    config = ThrottleConfig.model_validate(
        {
            "threshold": 1,
            "window_ms": 1000,
            "key_field": ".app",
            "exclude": {"field": ".host", "str_operator": "equal", "value": "db"},
        }
    )
    assert isinstance(config.exclude, Condition)
    assert config.exclude({"host": "DB"})
    assert config.model_dump()["exclude"] == {
        "field": ".host",
        "str_operator": "equal",
        "value": "db",
    }
    assert ThrottleConfig.model_validate(config.model_dump()) == config


def errors_of(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        ThrottleConfig.model_validate(data)
    return describe_validation_error(caught.value)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"window_ms": 10}, "threshold: required field is missing"),
        ({"threshold": 0, "window_ms": 10}, "threshold: Input should be greater than or equal"),
        ({"threshold": -3, "window_ms": 10}, "threshold: "),
        ({"threshold": True, "window_ms": 10}, "threshold: Input should be a valid integer"),
        ({"threshold": 1.5, "window_ms": 10}, "threshold: Input should be a valid integer"),
        ({"threshold": "5", "window_ms": 10}, "threshold: Input should be a valid integer"),
        ({"threshold": 1}, "window_ms: required field is missing"),
        ({"threshold": 1, "window_ms": 0}, "window_ms: Input should be greater than or equal"),
        ({"threshold": 1, "window_ms": 10**12}, "window_ms: Input should be less than"),
        ({"threshold": 1, "window_ms": 10, "windw_ms": 5}, "windw_ms: unknown field"),
        ({"threshold": 1, "window_ms": 10, "key_field": ".a..b"}, "key_field: field path"),
        ({"threshold": 1, "window_ms": 10, "key_field": 5}, "key_field: Input should be"),
        ({"threshold": 1, "window_ms": 10, "time_field": ".t["}, "time_field: field path"),
        ({"threshold": 1, "window_ms": 10, "max_keys": 0}, "max_keys: "),
        ({"threshold": 1, "window_ms": 10, "reroute_dropped": "yes"}, "reroute_dropped: "),
        (
            {"threshold": 1, "window_ms": 10, "exclude": {"field": ".a", "str_operator": "eq"}},
            "exclude: str_operator: unknown operator 'eq'",
        ),
        (
            {
                "threshold": 1,
                "window_ms": 10,
                "exclude": {"field": ".a", "str_operator": "regex_match", "value": "["},
            },
            "exclude: value: invalid regular expression",
        ),
    ],
)
def test_invalid_configuration_names_the_field(data: dict[str, Any], expected: str) -> None:
    assert expected in errors_of(data)


def test_blank_key_field_means_one_bucket() -> None:
    config = ThrottleConfig.model_validate({"threshold": 1, "window_ms": 10, "key_field": " "})
    assert config.key_field is None
    assert config.key_path is None


def test_null_exclude_means_no_condition() -> None:
    config = ThrottleConfig.model_validate({"threshold": 1, "window_ms": 10, "exclude": None})
    assert config.exclude is None


def test_config_is_immutable() -> None:
    config = ThrottleConfig.model_validate({"threshold": 1, "window_ms": 10})
    with pytest.raises(ValidationError):
        config.threshold = 2  # type: ignore[misc]


def test_with_time_field_validates() -> None:
    config = ThrottleConfig.model_validate({"threshold": 1, "window_ms": 10})
    assert config.with_time_field(".ts").time_field == ".ts"
    with pytest.raises(ValidationError):
        config.with_time_field(".ts[")


@pytest.mark.parametrize(
    ("amount", "unit", "window_ms"),
    [
        (250, "Milliseconds", 250),
        (1, WindowUnit.SECONDS, 1000),
        (1.5, "Seconds", 1500),
        (2, "Minutes", 120_000),
        (1, "Hours", 3_600_000),
    ],
)
def test_window_units_convert_to_window_ms(amount: float, unit: str, window_ms: int) -> None:
    assert window_ms_from(amount, unit) == window_ms


@pytest.mark.parametrize(("amount", "unit"), [(1, "Days"), (0, "Seconds"), (-1, "Hours")])
def test_window_units_reject_nonsense(amount: float, unit: str) -> None:
    with pytest.raises(ValueError, match="window"):
        window_ms_from(amount, unit)
