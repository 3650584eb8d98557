"""``tidegate serve`` with line parsing off: the floor of bench/bench_parsing_http.py.

    python bench/serve_without_parsing.py <python> -m tidegate serve --port N --workers 1

(what ``harness.Server`` runs with this as its ``prefix``). The parser of the one writer
(``logs.intake.parse_line``) is replaced by the identity before the server starts, so
every line is stored as a plain line and all else is the server's own. One worker only:
uvicorn runs it in this process (more workers would start fresh interpreters).
"""

from __future__ import annotations

import sys

import tidegate.logs.intake as intake
from tidegate.cli import main
from tidegate.logs.store import NewLine


def _unparsed(line: NewLine, templates: object = None) -> NewLine:
    return line


intake.parse_line = _unparsed  # type: ignore[assignment]
sys.argv = [sys.argv[0], *sys.argv[sys.argv.index("serve") :]]
sys.exit(main())
