"""Migrations import nothing from the app: a revision is frozen when it is written, so
what it needs of the app (SQL, constants, encoders) is copied into it. An import of
today's ``tidegate.*`` would change an old migration whenever the app changes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tidegate.migrations

VERSIONS = Path(tidegate.migrations.__file__).parent / "versions"
MIGRATIONS = sorted(VERSIONS.glob("*.py"))


def app_imports(source: str) -> list[str]:
    """Every import of the app in ``source``: module-level or in a function, relative or
    absolute, and ``importlib.import_module``/``__import__`` of a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_app(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level > 0 or _is_app(node.module or ""):
                found.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Call) and node.args:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            name = node.func.id if isinstance(node.func, ast.Name) else name
            first = node.args[0]
            if (
                name in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and _is_app(first.value)
            ):
                found.append(first.value)
    return found


def _is_app(module: str) -> bool:
    return module == "tidegate" or module.startswith("tidegate.")


def test_there_are_migrations_to_check() -> None:
    assert len(MIGRATIONS) >= 11


@pytest.mark.parametrize("path", MIGRATIONS, ids=[path.name for path in MIGRATIONS])
def test_a_migration_imports_nothing_from_the_app(path: Path) -> None:
    assert app_imports(path.read_text(encoding="utf-8")) == []


def test_the_check_sees_every_form_of_import() -> None:
    source = """
import tidegate.logs.store
from tidegate.logs.store import DAY_MS
from . import sibling
import sqlalchemy as sa
from alembic import op
import tidegateway

def upgrade():
    from tidegate.models import Base
    importlib.import_module("tidegate.logs")
    __import__("tidegate")
"""
    assert app_imports(source) == [
        "tidegate.logs.store",
        "tidegate.logs.store",
        ".",
        "tidegate.models",
        "tidegate.logs",
        "tidegate",
    ]
