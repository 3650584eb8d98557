"""scripts/import_cycles.py: package cycles and back-up imports read from the source,
checked against the committed baseline by `make lint` (issue 23)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "import_cycles.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_cycles", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


cycles = _load()

PYPROJECT = """
[tool.importlinter]
root_package = "pkg"

[[tool.importlinter.contracts]]
name = "layers"
type = "layers"
layers = ["pkg.top", "pkg.a : pkg.b : pkg.c", "pkg.base"]
"""


def _package(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    src = tmp_path / "src"
    for name, text in {"pkg/__init__.py": "", **files}.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(PYPROJECT)
    return src, pyproject


def test_cycles_and_back_up_arrows_of_a_small_package(tmp_path: Path) -> None:
    src, pyproject = _package(
        tmp_path,
        {
            "pkg/top.py": "import pkg.a\n",
            "pkg/a/__init__.py": "",
            "pkg/a/x.py": "from pkg.b import y\n",
            # In a function: it runs, so it counts (and closes a cycle a -> b -> a).
            "pkg/b/__init__.py": "",
            "pkg/b/y.py": "def f():\n    from ..a import x\n",
            # For the type checker only: never runs, never counts.
            "pkg/c.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a.x\n"
                "else:\n    import pkg.base\n"
            ),
            # The foundation importing a domain and the top: two arrows back up.
            "pkg/base.py": "def g():\n    import pkg.c\n    from pkg import top\n",
        },
    )
    report = cycles.analyse(src, pyproject, root="pkg")
    assert report.cycles == [["pkg.a", "pkg.b"], ["pkg.base", "pkg.c"]]
    assert report.back_up == [("pkg.base", "pkg.c"), ("pkg.base", "pkg.top")]


def test_the_check_fails_when_a_cycle_or_the_count_grows(tmp_path: Path) -> None:
    baseline = {"cycles": [["pkg.a", "pkg.b"]], "back_up_arrows": 1}
    same = cycles.Report([["pkg.a", "pkg.b"]], [("pkg.base", "pkg.c")])
    assert cycles.regressions(same, baseline) == []
    smaller = cycles.Report([], [])
    assert cycles.regressions(smaller, baseline) == []
    grown = cycles.Report([["pkg.a", "pkg.b", "pkg.c"]], [("x", "y"), ("x", "z")])
    problems = cycles.regressions(grown, baseline)
    assert len(problems) == 2
    assert "pkg.c joining it" in problems[0]
    assert "2 arrows run back up the layers (baseline 1)" in problems[1]


def test_the_package_is_within_its_committed_baseline() -> None:
    assert cycles.main(["--check"]) == 0


def test_a_new_in_function_import_that_closes_a_cycle_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two domains joining a cycle through an import inside a function (the package has
    none left: any cycle is new), which also runs back up the domains' order."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "tidegate", src / "tidegate")
    baseline = tmp_path / "baseline.json"
    assert cycles.main(["--src", str(src), "--write-baseline", "--baseline", str(baseline)]) == 0
    assert json.loads(baseline.read_text()) == {"cycles": [], "back_up_arrows": 0}
    with (src / "tidegate" / "ingest" / "repository.py").open("a") as module:
        module.write("\n\ndef _deliberate() -> None:\n    import tidegate.syslog.service\n")
    capsys.readouterr()
    assert cycles.main(["--src", str(src), "--check", "--baseline", str(baseline)]) == 1
    err = capsys.readouterr().err
    assert "a cycle of 2 packages, tidegate.ingest, tidegate.syslog joining it" in err
    assert "1 arrows run back up the layers (baseline 0)" in err
