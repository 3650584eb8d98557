"""The coverage report of ``make test``, and its floor.

``make test`` runs pytest under SlipCover, which writes the line coverage of the package
(merged over the xdist workers) as JSON. This prints it as a table (files fully covered
left out) and exits 1 when the total is below the floor in ``pyproject.toml``
(``[tool.tidegate.coverage] floor``), which may only rise.

SlipCover's own ``fail-under`` is not used: with it set, SlipCover 1.1 merges the
workers' coverage for the check and then prints the table from the test runner's process
alone (a 2% report beside a 91% check).
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

import slipcover

ROOT = Path(__file__).resolve().parent.parent


def floor() -> float:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return float(config["tool"]["tidegate"]["coverage"]["floor"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="SlipCover's JSON report")
    args = parser.parse_args()
    coverage = json.loads(args.report.read_text())
    slipcover.print_coverage(coverage, outfile=sys.stdout, skip_covered=True)
    total = float(coverage["summary"]["percent_covered"])
    required = floor()
    verdict = "reached" if total >= required else "NOT reached"
    print(f"Coverage {total:.2f}% of the package's lines; the floor of {required:g}% {verdict}.")
    return 0 if total >= required else 1


if __name__ == "__main__":
    sys.exit(main())
