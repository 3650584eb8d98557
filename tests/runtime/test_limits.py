"""The gateway's back-pressure limits are settings like the others: read from
``TIDEGATE_GATEWAY_*`` by the settings class, bounded, and a bad value stops start-up
with a message naming the variable (docs/runtime.md, "Back-pressure")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tidegate.config import Settings, SettingsError
from tidegate.runtime.limits import RuntimeLimits
from tidegate.runtime.runtime import build_runtime

GATEWAY_VARIABLES = (
    "TIDEGATE_GATEWAY_ROUTE_INFLIGHT",
    "TIDEGATE_GATEWAY_DESTINATION_INFLIGHT",
    "TIDEGATE_GATEWAY_HTTP_CONCURRENCY",
    "TIDEGATE_GATEWAY_DEADLINE_MS",
    "TIDEGATE_GATEWAY_CPU_SLOTS",
)


@pytest.fixture(autouse=True)
def _no_gateway_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in GATEWAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _figures(limits: RuntimeLimits) -> tuple[int, ...]:
    """The limits the variables set, in ``GATEWAY_VARIABLES`` order."""
    return (
        limits.route_inflight,
        limits.destination_inflight,
        limits.http_concurrency,
        limits.delivery_deadline_ms,
        limits.cpu_slots,
    )


def test_the_defaults_are_the_documented_ones() -> None:
    assert _figures(RuntimeLimits.from_settings(Settings.from_env())) == (64, 32, 4, 10_000, 2)


def test_good_values_reach_the_runtime_the_lifespan_builds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for value, name in enumerate(GATEWAY_VARIABLES, start=3):
        monkeypatch.setenv(name, str(value))
    runtime = build_runtime(Settings.from_env(), redis=None)
    assert _figures(runtime.limits) == (3, 4, 5, 6, 7)
    assert runtime.route_gates.limit == 3
    assert runtime.destination_gates.limit == 4


@pytest.mark.parametrize("name", GATEWAY_VARIABLES)
@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("two", "valid integer"),
        ("0", "greater than or equal to 1"),
        ("-5", "greater than or equal to 1"),
        ("1e99", "valid integer"),
        ("99999999999", "less than or equal to"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, reason: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as raised:
        Settings.from_env()
    message = str(raised.value)
    assert message.startswith(f"{name}: ")
    assert reason in message


def test_several_bad_values_are_all_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDEGATE_GATEWAY_CPU_SLOTS", "two")
    monkeypatch.setenv("TIDEGATE_GATEWAY_DEADLINE_MS", "0")
    with pytest.raises(SettingsError) as raised:
        Settings.from_env()
    assert "TIDEGATE_GATEWAY_CPU_SLOTS: " in str(raised.value)
    assert "TIDEGATE_GATEWAY_DEADLINE_MS: " in str(raised.value)


def test_the_cli_stops_before_it_starts_with_the_variable_named(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "TIDEGATE_DATA_DIR": str(tmp_path / "var"),
        "TIDEGATE_GATEWAY_CPU_SLOTS": "two",
    }
    env.pop("TIDEGATE_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "tidegate", "db", "upgrade"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("tidegate: cannot start: TIDEGATE_GATEWAY_CPU_SLOTS: ")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "var").exists()
