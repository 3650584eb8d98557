"""What start-up imports: every server process, worker, CLI call and test worker pays for
it. Checked by the modules loaded (in a fresh interpreter), never by timing.

`import tidegate.app` is the factory only: the route tree (FastAPI builds each route as
its module is imported), the lifespan's runtime and their libraries are imported by
create_app. The CLI's other commands import what they use: no web app, no FastAPI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Imported by create_app (and the route tree), not by `import tidegate.app`.
NOT_AT_APP_IMPORT = (
    "tidegate.router",
    "tidegate.pipelines.endpoints",
    "tidegate.alerts.index_rate.endpoints",
    "tidegate.alerts.runner",
    "tidegate.components.catalogue",
    "tidegate.models",
    "tidegate.web.endpoints",
    "sqlalchemy",
    "redis",
    "httpx",
    "jinja2",
    "cryptography",
    "argon2",
    "re2",
    "prometheus_client",
)
# The web app and its framework: no command but `serve` needs them.
WEB = ("tidegate.app", "tidegate.router", "fastapi", "starlette", "uvicorn")


def loaded_after(code: str, tmp_path: Path, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    report = tmp_path / "modules.json"
    script = (
        f"{code}\n"
        "import json, sys\n"
        f"open({str(report)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(report.read_text()))


def held(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in modules]


def test_importing_the_app_module_builds_no_routes_and_loads_no_runtime(tmp_path: Path) -> None:
    modules = loaded_after("import tidegate.app", tmp_path)
    assert held(modules, NOT_AT_APP_IMPORT) == []


def test_create_app_still_builds_the_whole_app(tmp_path: Path) -> None:
    code = (
        "from tidegate.app import create_app\n"
        "from tidegate.config import Settings\n"
        f"app = create_app(Settings(data_dir={str(tmp_path)!r}, secret_key='x'))\n"
        "assert '/v3/pipeline' in app.openapi()['paths']\n"
    )
    modules = loaded_after(code, tmp_path)
    assert "tidegate.router" in modules
    assert "tidegate.pipelines.endpoints" in modules
    # The S3 signer's library is imported when a request is signed, not by the catalogue
    # that names the S3 destination (about a tenth of a second of every start).
    assert "botocore" not in modules
    # The segments' engine and Parquet writer load with the first segment read or write:
    # a store without segments never pays for them.
    assert "duckdb" not in modules
    assert "pyarrow" not in modules
    # The user-agent parsers load with the first parse_user_agent built (woothee; uap-core's
    # rules with PyYAML: about 0.12 s of every start).
    assert held(modules, ("woothee", "ua_parser", "yaml")) == []


def test_enterprise_create_does_not_import_the_web_app(tmp_path: Path) -> None:
    env = {
        "TIDEGATE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'cli.sqlite3'}",
        "TIDEGATE_DATA_DIR": str(tmp_path / "var"),
    }
    code = (
        "import contextlib, io\n"
        "from tidegate import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert cli.main(['enterprise', 'create', '--name', 'Umbrella']) == 0\n"
    )
    modules = loaded_after(code, tmp_path, env)
    assert "tidegate.enterprise.service" in modules
    assert held(modules, WEB) == []


def test_throttle_does_not_import_the_web_app_or_the_database(tmp_path: Path) -> None:
    code = (
        "import contextlib, io\n"
        "from tidegate import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['throttle', '--help'])\n"
    )
    modules = loaded_after(code, tmp_path)
    assert "tidegate.processing.throttle_cli" in modules
    assert held(modules, (*WEB, "sqlalchemy")) == []
