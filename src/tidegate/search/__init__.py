"""The platform's search query syntax: parse once, match many lines.

>>> query = compile_query('level:[warn,error] -app:healthcheck "timed out"')
>>> query.matches(LogLine("upstream Timed out", app="api", level="ERROR"))
True

The syntax, and every interpretation tidegate makes of it, is in docs/search-syntax.md.
"""

from tidegate.search.compiler import BUILTIN_FIELDS
from tidegate.search.errors import QuerySyntaxError
from tidegate.search.line import LogLine
from tidegate.search.parser import MAX_NESTING_DEPTH, MAX_QUERY_LENGTH
from tidegate.search.query import Query, compile_query

__all__ = [
    "BUILTIN_FIELDS",
    "MAX_NESTING_DEPTH",
    "MAX_QUERY_LENGTH",
    "LogLine",
    "Query",
    "QuerySyntaxError",
    "compile_query",
]
