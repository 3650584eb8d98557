"""The OpenAPI document is valid, describes every route, and the running server keeps
to it under property-based fuzzing (schemathesis) through real HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import zlib
from collections.abc import Iterator
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from openapi_spec_validator import validate
from schemathesis.specs.openapi.checks import positive_data_acceptance
from tests.conftest import (
    TEST_DB_POOL_SIZE,
    LiveServer,
    _create_pg_database,
    _drop_pg_database,
    make_settings,
    pg_url,
)
from tests.live import LIVE_SECONDS, live_post

from tidegate.app import create_app


def test_document_is_valid_openapi(tmp_path: Path) -> None:
    document = create_app(make_settings("sqlite+aiosqlite://", tmp_path)).openapi()
    validate(document)
    assert document["info"]["version"] == "3.0.0"


def test_every_route_is_documented_with_errors(tmp_path: Path) -> None:
    app = create_app(make_settings("sqlite+aiosqlite://", tmp_path))
    document = app.openapi()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if path == "/healthz":
                continue
            assert "401" in operation["responses"], f"{method} {path}"
            assert "400" in operation["responses"], f"{method} {path}"
            assert "422" not in operation["responses"], f"{method} {path}"


def test_account_schema_carries_the_spec_rules(tmp_path: Path) -> None:
    schemas = create_app(make_settings("sqlite+aiosqlite://", tmp_path)).openapi()["components"][
        "schemas"
    ]
    account = schemas["Account"]["properties"]
    assert account["account_id"]["maxLength"] == 24
    assert account["company"]["maxLength"] == 250
    assert account["retention"]["minimum"] == 0
    assert account["retention"]["maximum"] == 90
    assert account["status"]["enum"] == ["active", "deactivated", "pending"]
    assert {"type": "null"} in account["deactivated"]["anyOf"]
    owner = schemas["AccountOwner"]["properties"]
    assert owner["accounts"]["maxItems"] == 200
    assert owner["enterprise_ids"]["maxItems"] == 50
    assert owner["email"]["format"] == "email"
    error = schemas["V3Error"]["properties"]
    assert error["status"]["minimum"] == 300
    assert error["status"]["maximum"] == 599


# Session scope: the fuzz tests of every operation group share one server per backend in
# each xdist worker (a module-scoped server would restart whenever the worker's tests
# interleave with another module's).
@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def fuzz_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    workdir = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    pg_name = None
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{workdir / 'fuzz.sqlite3'}"
    else:
        pg_name = asyncio.run(_create_pg_database())
        url = pg_url(pg_name)
    env = {
        "TIDEGATE_DATABASE_URL": url,
        "TIDEGATE_DATA_DIR": str(workdir / "var"),
        "TIDEGATE_SECRET_KEY": "fuzz",
        "TIDEGATE_DB_POOL_SIZE": str(TEST_DB_POOL_SIZE),
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_BOOTSTRAP": "0",
    }
    server = LiveServer(env=env, cwd=workdir)
    server.start()
    try:
        created = json.loads(
            subprocess.run(
                [sys.executable, "-m", "tidegate", "enterprise", "create", "--name", "fuzz"],
                env={**os.environ, **env},
                capture_output=True,
                check=True,
            ).stdout
        )
        enterprise = {"Authorization": f"Token {created['token']}"}
        account = live_post(
            server.base_url + "/v3/enterprise/account",
            json={"company": "fuzz", "owneremail": "fuzz@example.com"},
            headers=enterprise,
        ).json()["data"]
        yield {
            "backend": request.param,
            "base_url": server.base_url,
            "identities": [
                enterprise,
                {**enterprise, "x-delegate-account-id": account["account_id"]},
            ],
        }
    finally:
        server.stop()
        if pg_name:
            asyncio.run(_drop_pg_database(pg_name))


# The boundary values of every parameter (schemathesis's coverage phase, some seventy
# cases an operation whatever max_examples says) are sent to the SQLite server; the
# PostgreSQL one gets the examples and the random cases. TIDEGATE_FUZZ_DEEP=1 sends
# everything to both, as before a release.
FUZZ_DEEP = os.environ.get("TIDEGATE_FUZZ_DEEP", "") not in ("", "0")


@pytest.fixture(scope="session")
def api_schema(fuzz_target: dict[str, Any]) -> Any:
    schema = schemathesis.openapi.from_url(
        fuzz_target["base_url"] + "/openapi.json", timeout=LIVE_SECONDS
    )
    if fuzz_target["backend"] != "sqlite" and not FUZZ_DEEP:
        schema.config.phases.coverage.enabled = False
    return schema


# Live tail and the tap stream answer event streams that never end by themselves, which a
# fuzzer would wait on forever; tests/tail and tests/pipelines cover them.
EXCLUDED = ("/v1/tail", "/v3/pipeline/{pipeline_id}/tap/{component_id}/stream")

# The operations in groups of about twenty, one test item per group and backend, so xdist
# spreads the fuzzing over its workers and a timeout names the group that was running.
# Every documented operation is in exactly one group (test_every_operation_is_fuzzed).
OPERATION_GROUPS = {
    "enterprise_and_auth": r"^/(v3/enterprise|v3/auth|v1/auth|login|info|orgs|healthz)(/|$)",
    "boards_views_alerts": r"^/v1/config/(board|categories|view|presetalert|index-rate)(/|$)",
    "keys_rules_members": r"^/v1/config/(archiving|groups|ingestion|keys|members|parsing)(/|$)",
    "data_plane": r"^/(logs|v1/aggregate|v1/export|v2/export|v1/usage|v2/usage|gateway)(/|$)",
    "pipelines": r"^/v3/pipeline(/metric/usage|/simulate-processor|/component-type|/\{pipeline_id\}(/[a-z_-]+)?)?/?$",
    "pipeline_nodes": r"^/v3/pipeline/\{pipeline_id\}/(?!alert/)[a-z_-]+/(?!\{component_id\}/alert)",
    "pipeline_alerts": r"^/v3/pipeline/\{pipeline_id\}/(\{kind\}/\{component_id\}/)?alert(/|$)",
    "gateway_routes": r"^/v3/pipeline/gateway-route(/|$)",
}


def test_every_operation_is_fuzzed(tmp_path: Path) -> None:
    document = create_app(make_settings("sqlite+aiosqlite://", tmp_path)).openapi()
    for path in document["paths"]:
        if path in EXCLUDED:  # left out of every group's test
            continue
        groups = [name for name, rx in OPERATION_GROUPS.items() if re.search(rx, path)]
        assert len(groups) == 1, f"{path} is in the fuzz groups {groups}"


# Five random examples an operation and generation mode in `make test` (about 130
# operations, two backends), besides the explicit examples and, on SQLite, the boundary
# cases; TIDEGATE_FUZZ_EXAMPLES=200 for a deeper run before a release. (Ten cost the
# suite about 15 s of its six minutes on two cores.)
FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("TIDEGATE_FUZZ_EXAMPLES", "5")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="session")
def fuzz_session() -> Iterator[requests.Session]:
    """One HTTP session for every case. Without it each case built its own, and a new
    session reads the proxy settings from the whole environment on every request (a
    tenth of the fuzzer's CPU here). The server is on 127.0.0.1: no proxy applies. No
    cookie is kept (each case is sent as one of the identities, by its headers only),
    nor a connection (each case connects, as it did)."""
    with requests.Session() as session:
        session.trust_env = False
        session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
        session.headers["Connection"] = "close"
        yield session


def _fuzz_test(path_regex: str) -> Any:
    schema = (
        schemathesis.pytest.from_fixture("api_schema")
        .exclude(path=list(EXCLUDED))
        .include(path_regex=path_regex)
    )

    @schema.parametrize()
    @FUZZ_SETTINGS
    def test(case: Any, fuzz_target: dict[str, Any], fuzz_session: requests.Session) -> None:
        # Each case goes as one of the identities (the enterprise itself, or acting for its
        # account), chosen by the case itself so that a failure replays as it happened:
        # every operation gets dozens of cases, so both see each operation, at half the
        # requests of sending every case as both.
        identities = fuzz_target["identities"]
        drawn = repr((case.method, case.path_parameters, case.query, case.headers, case.body))
        # positive_data_acceptance is left out on purpose: a schema-valid request may still
        # be rightly refused by a rule no JSON Schema can state (an unknown id, a
        # cross-field rule).
        case.call_and_validate(
            session=fuzz_session,
            headers=identities[zlib.crc32(drawn.encode()) % len(identities)],
            excluded_checks=[positive_data_acceptance],
            timeout=LIVE_SECONDS,
        )

    return test


for _group, _path_regex in OPERATION_GROUPS.items():
    globals()[f"test_api_keeps_to_its_document_{_group}"] = _fuzz_test(_path_regex)
