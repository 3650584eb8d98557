"""data-profiler: events pass unchanged; the node's profile counts fields by type, apps,
hosts and levels, bounded however many distinct names and values come."""

from __future__ import annotations

import pytest
from tests.components.helpers import build, run

from tidegate.components.processors import data_profiler
from tidegate.components.validation import validate_user_config
from tidegate.errors import ValidationFailed

TYPE = "data-profiler"
CONFIG = {
    "app_fields": [".app", ".container"],
    "host_fields": [".host"],
    "level_fields": [".level", ".meta.severity"],
    "line_fields": [".line", ".message"],
    "label_fields": [".labels"],
}


async def test_events_pass_unchanged_and_are_profiled() -> None:
    runtime = build(TYPE, CONFIG)
    events = [
        {"app": "api", "host": "h1", "level": "info", "line": "ok", "n": 1},
        {"container": "db", "host": "h1", "meta": {"severity": "warn"}, "message": "slow"},
        {"app": "api", "n": "1", "labels": {"team": "core"}},
    ]
    out = await run(TYPE, CONFIG, events, runtime)
    assert out.main == events
    assert all(a is b for a, b in zip(out.main, events, strict=True))
    profile = runtime.profiler.profile.as_dict()
    assert profile["events"] == 3
    assert profile["fields"][".n"] == {"number": 1, "string": 1}
    assert profile["fields"][".meta"] == {"object": 1}
    assert profile["fields"][".meta.severity"] == {"string": 1}
    assert profile["apps"] == {"api": 2, "db": 1}
    assert profile["hosts"] == {"h1": 2}
    assert profile["levels"] == {"info": 1, "warn": 1}
    assert profile["with_line"] == 2
    assert profile["with_labels"] == 1


async def test_profile_is_bounded_with_unbounded_names_and_values() -> None:
    runtime = build(TYPE, CONFIG)
    for start in range(0, 20_000, 1_000):
        batch = [{f"field_{n}": n, "app": f"app-{n}"} for n in range(start, start + 1_000)]
        await run(TYPE, CONFIG, batch, runtime)
    profile = runtime.profiler.profile
    assert profile.events == 20_000
    assert len(profile.fields) == data_profiler.MAX_PATHS
    assert len(profile.apps) == data_profiler.MAX_VALUES + 1  # and (other)
    assert profile.apps[data_profiler.OTHER] == 20_000 - data_profiler.MAX_VALUES


def test_config_needs_data_access_paths() -> None:
    for refused in (
        {**CONFIG, "app_fields": ["not-valid-field-reference"]},
        {**CONFIG, "app_fields": []},
        {**CONFIG, "host_fields": [f".h{n}" for n in range(11)]},
        {k: v for k, v in CONFIG.items() if k != "line_fields"},
        {**CONFIG, "other_fields": [".x"]},
    ):
        with pytest.raises(ValidationFailed) as caught:
            validate_user_config(kind="processor", type_=TYPE, user_config=refused)
        assert caught.value.errors[0].instance_path.startswith("/user_config")
    with pytest.raises(ValidationFailed) as caught:
        validate_user_config(
            kind="processor", type_=TYPE, user_config={**CONFIG, "label_fields": ["labels"]}
        )
    assert caught.value.errors[0].instance_path == "/user_config/label_fields/0"
    assert "valid data access syntax" in caught.value.errors[0].message
