"""The log formats of common servers and runtimes, as the platform recognises them
(docs/line-parsing.md, "Known formats"): PostgreSQL, Redis, Tomcat (Catalina), Ruby's
Logger (Rails) and Go's standard ``log`` package.

Each parser takes a line's text (already stripped at its end, at most
``parsing.MAX_PARSED_CHARS``) and answers its fields and level word, or None when the
text is not in its form. Tenant input: every expression is anchored at the start, with
bounded repeats and no two adjacent parts able to match the same character, so the
engine never backtracks more than a constant per character (as in ``logs.parsing``).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ServerFormat", "from_digit", "ruby_logger"]

# The fields a line holds and the level it gives (a canonical word, or None).
ServerFormat = tuple[dict[str, Any], str | None]


def _head(head: re.Match[str], text: str, *names: str) -> dict[str, Any]:
    """The named parts of a line's head that are there (``pid`` as a number), then the
    rest of the line as its message."""
    fields: dict[str, Any] = {}
    for name in names:
        value = head.group(name)
        if value:
            fields[name] = int(value) if name == "pid" else value
    fields["message"] = text[head.end() :]
    return fields


# -- PostgreSQL --------------------------------------------------------------------------

# log_line_prefix '%m [%p] ' (the default) or Debian's '%m [%p] %q%u@%d ', then the
# severity and two spaces: "2025-11-22 08:00:01.123 UTC [4711] app@shop ERROR:  ...".
_POSTGRES = re.compile(
    r"(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?: [A-Za-z][\w+/-]{0,31})?)"
    r" \[(?P<pid>\d{1,10})\] (?:(?P<user>[^\s@\[]{0,63})@(?P<database>[^\s]{0,63}) )?"
    r"(?P<severity>[A-Z][A-Z0-9]{2,9}):  "
)
_POSTGRES_LEVELS = {
    "DEBUG1": "DEBUG",
    "DEBUG2": "DEBUG",
    "DEBUG3": "DEBUG",
    "DEBUG4": "DEBUG",
    "DEBUG5": "DEBUG",
    "INFO": "INFO",
    "NOTICE": "NOTICE",
    "WARNING": "WARNING",
    "ERROR": "ERROR",
    "LOG": "INFO",
    "FATAL": "FATAL",
    "PANIC": "EMERGENCY",
    # The lines that follow an error's, about it: no level of their own.
    "DETAIL": None,
    "HINT": None,
    "QUERY": None,
    "CONTEXT": None,
    "LOCATION": None,
    "STATEMENT": None,
}


def _postgres(text: str) -> ServerFormat | None:
    head = _POSTGRES.match(text)
    if head is None or head.group("severity") not in _POSTGRES_LEVELS:
        return None
    fields = _head(head, text, "timestamp", "pid", "severity", "user", "database")
    return fields, _POSTGRES_LEVELS[head.group("severity")]


# -- Redis -------------------------------------------------------------------------------

# "pid:role dd Mon yyyy hh:mm:ss.mmm <mark> message"; the role is X (sentinel), C (a
# child writing the RDB/AOF), S (replica) or M (primary); the mark is the level.
_REDIS = re.compile(
    r"(?P<pid>\d{1,10}):(?P<role>[XCSM]) "
    r"(?P<timestamp>\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}\.\d{3}) (?P<mark>[.*#-]) "
)
_REDIS_ROLES = {"X": "sentinel", "C": "child", "S": "replica", "M": "primary"}
_REDIS_LEVELS = {".": "DEBUG", "-": "DEBUG", "*": "NOTICE", "#": "WARNING"}


def _redis(text: str) -> ServerFormat | None:
    head = _REDIS.match(text)
    if head is None:
        return None
    fields = _head(head, text, "timestamp", "pid")
    fields["role"] = _REDIS_ROLES[head.group("role")]
    return fields, _REDIS_LEVELS[head.group("mark")]


# -- Tomcat (Catalina's OneLineFormatter) ------------------------------------------------

# "22-Nov-2025 08:00:01.123 INFO [main] org.apache.catalina.startup.Catalina.start msg"
_TOMCAT = re.compile(
    r"(?P<timestamp>\d{2}-[A-Z][a-z]{2}-\d{4} \d{2}:\d{2}:\d{2}\.\d{3}) "
    r"(?P<level>SEVERE|WARNING|INFO|CONFIG|FINEST|FINER|FINE) "
    r"\[(?P<thread>[^\]]{1,256})\] (?P<logger>[^\s]{1,512}) "
)
_TOMCAT_LEVELS = {
    "SEVERE": "SEVERE",
    "WARNING": "WARNING",
    "INFO": "INFO",
    "CONFIG": "INFO",
    "FINE": "DEBUG",
    "FINER": "TRACE",
    "FINEST": "TRACE",
}


def _tomcat(text: str) -> ServerFormat | None:
    head = _TOMCAT.match(text)
    if head is None:
        return None
    fields = _head(head, text, "timestamp", "thread", "logger")
    return fields, _TOMCAT_LEVELS[head.group("level")]


# -- Go's standard log package -----------------------------------------------------------

# log.LstdFlags "2025/11/22 08:00:01 msg", with Lmicroseconds ".123456", with
# Lshortfile or Llongfile "file.go:23: " before the message. nginx's error lines share
# the date's shape and are read first (logs.parsing).
_GO = re.compile(
    r"(?P<timestamp>\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{6})?) "
    r"(?:(?P<caller>[^\s:]{1,256}\.go:\d{1,9}): )?"
)


def _go(text: str) -> ServerFormat | None:
    head = _GO.match(text)
    if head is None:
        return None
    # The level, if any, is a word of the text (logs.parsing).
    return _head(head, text, "timestamp", "caller"), None


def from_digit(text: str) -> ServerFormat | None:
    """A line that starts with a digit, in one of the forms above."""
    for parser in (_postgres, _redis, _tomcat, _go):
        found = parser(text)
        if found is not None:
            return found
    return None


# -- Ruby's Logger (Rails) ---------------------------------------------------------------

# "I, [2025-11-22T08:00:01.123456 #4711]  INFO -- progname: message"
_RUBY = re.compile(
    r"(?P<letter>[DIWEFA]), \[(?P<timestamp>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)"
    r" #(?P<pid>\d{1,10})\] {1,2}(?P<level>DEBUG|INFO|WARN|ERROR|FATAL|ANY) -- "
    r"(?P<progname>[^:]{0,256}): "
)


def ruby_logger(text: str) -> ServerFormat | None:
    """A line of Ruby's standard Logger (Rails' default), or None."""
    head = _RUBY.match(text)
    if head is None or head.group("level")[0] != head.group("letter"):
        return None
    level = head.group("level")
    return _head(head, text, "timestamp", "pid", "progname"), None if level == "ANY" else level
