"""CPU to test one line against a term with punctuation inside (not a test).

    PYTHONPATH=src python bench/bench_term_search.py

A term such as 'a.a.a.b' whose first occurrence in the line is inside a word is
searched on further. Before: a regular expression (a word boundary, then the term),
which compares up to the whole term at each of the line's word starts: line length
times term length. Now: the line is marked after each non-word character and searched
once. Prints milliseconds per line (process time) for the former search and the
current matcher, on a hostile line ('a.' repeated) and on an ordinary one. Under load
the numbers are noisy.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import partial

from tidegate.search import LogLine, compile_query


def cpu_ms(test: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        test()
        best = min(best, time.process_time() - start)
    return best * 1000


def main() -> None:
    print(f"{'line':>8} {'term':>6} {'former ms':>10} {'now ms':>8}  line shape")
    for term_length in (100, 1_000, 4_000):
        term = "a." * (term_length // 2) + "b"
        former = re.compile(r"\b" + re.escape(term)).search
        query = compile_query(term)
        for length, shape, text in (
            (100_000, "hostile", "x" + term + " " + "a." * 50_000),
            (100_000, "ordinary", "x" + term + " " + "GET /api/v1/items 200 12ms " * 3_700),
        ):
            line = LogLine(text)
            assert not query.matches(line)
            assert former(line.folded, 2) is None
            old = cpu_ms(partial(former, line.folded, 2))
            new = cpu_ms(partial(query.matches, line))
            print(f"{length:>8} {term_length:>6} {old:>10.2f} {new:>8.2f}  {shape}")


if __name__ == "__main__":
    main()
