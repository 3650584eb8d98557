"""Package cycles and back-up imports in tidegate, read from the source (issue 23).

import-linter's layers contract cannot see a cycle among the packages of one layer (the
domains share one), nor the imports its ``ignore_imports`` exempts. This reads every
module's imports with ``ast`` (module level and inside functions; not those under
``if TYPE_CHECKING:``, which never run), groups modules by their top-level package
under ``tidegate`` (``tidegate.alerts``, ``tidegate.config``...) and prints

* the packages that form cycles (strongly connected groups of two or more), and
* the arrows that run back up the layer order written in ``pyproject.toml``: distinct
  (importing module, imported module) pairs whose imported package sits in a higher
  layer than the importer's, exemptions included.

``--check`` compares them with the baseline committed beside this script and fails
(exit 1) when a cycle appears that is not inside a baseline cycle, or the arrow count
grows; ``--write-baseline`` records the current figures (only when they improved).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASELINE = Path(__file__).resolve().with_name("import_cycles_baseline.json")


@dataclass(frozen=True)
class Report:
    cycles: list[list[str]]
    back_up: list[tuple[str, str]]

    def figures(self) -> dict[str, object]:
        return {"cycles": self.cycles, "back_up_arrows": len(self.back_up)}


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _run_time_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node`` except the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _run_time_nodes(other)
            continue
        yield child
        yield from _run_time_nodes(child)


def imports_of(source: str, module: str, *, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports at run time."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in _run_time_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    resolved = set()
    for name in found:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            resolved.add(name)
    return resolved


def unit(module: str, root: str) -> str:
    """``tidegate.alerts.runner`` -> ``tidegate.alerts``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == root and len(parts) > 1 else module


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; groups of two or more, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return sorted(groups)


def layer_order(pyproject: Path) -> list[list[str]]:
    """The layers contract's packages, top layer first."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["type"] == "layers":
            return [
                [name.strip() for name in line.replace("|", ":").split(":") if name.strip()]
                for line in contract["layers"]
            ]
    raise SystemExit(f"{pyproject}: no layers contract")


def analyse(src: Path, pyproject: Path, root: str = "tidegate") -> Report:
    paths = sorted((src / root).rglob("*.py"))
    modules = {module_name(path, src): path for path in paths}
    known = set(modules)
    edges: set[tuple[str, str]] = set()
    for module, path in modules.items():
        for target in imports_of(
            path.read_text(encoding="utf-8"),
            module,
            is_package=path.name == "__init__.py",
            known=known,
        ):
            edges.add((module, target))
    graph: dict[str, set[str]] = {}
    for importer, target in edges:
        if unit(importer, root) != unit(target, root):
            graph.setdefault(unit(importer, root), set()).add(unit(target, root))
    layer_of = {
        package: depth
        for depth, packages in enumerate(layer_order(pyproject))
        for package in packages
    }
    back_up = sorted(
        (importer, target)
        for importer, target in edges
        if unit(importer, root) in layer_of
        and unit(target, root) in layer_of
        and layer_of[unit(target, root)] < layer_of[unit(importer, root)]
    )
    return Report(strongly_connected(graph), back_up)


def regressions(report: Report, baseline: dict[str, Any]) -> list[str]:
    """What grew beyond ``baseline``: a cycle not inside a baseline cycle, more arrows."""
    allowed = [set(group) for group in baseline["cycles"]]
    problems = []
    for group in report.cycles:
        if any(set(group) <= known for known in allowed):
            continue
        nearest = max(allowed, key=lambda known: len(known & set(group)), default=set())
        joined = sorted(set(group) - nearest)
        problems.append(
            f"a cycle of {len(group)} packages, {', '.join(joined)} joining it: "
            + " <-> ".join(group)
        )
    limit = int(baseline["back_up_arrows"])
    if len(report.back_up) > limit:
        problems.append(f"{len(report.back_up)} arrows run back up the layers (baseline {limit})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--check", action="store_true", help="fail beyond the baseline")
    parser.add_argument("--write-baseline", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="list every back-up arrow")
    args = parser.parse_args(argv)
    report = analyse(args.src, args.pyproject)
    print(f"{len(report.cycles)} package cycle(s):")
    for group in report.cycles:
        print(f"  {len(group)} packages: {', '.join(name.split('.', 1)[-1] for name in group)}")
    print(f"{len(report.back_up)} arrow(s) run back up the layer order")
    if args.verbose:
        for importer, target in report.back_up:
            print(f"  {importer} -> {target}")
    if args.write_baseline:
        args.baseline.write_text(json.dumps(report.figures(), indent=2) + "\n", encoding="utf-8")
        print(f"baseline written: {args.baseline}")
        return 0
    if args.check:
        baseline = json.loads(args.baseline.read_text(encoding="utf-8"))
        problems = regressions(report, baseline)
        for problem in problems:
            print(f"import_cycles: {problem}", file=sys.stderr)
        if problems:
            print(
                "Move the shared piece down (docs/architecture.md); if the change is meant, "
                "update scripts/import_cycles_baseline.json with --write-baseline.",
                file=sys.stderr,
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
