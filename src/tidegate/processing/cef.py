"""ArcSight's Common Event Format, read as the platform's ``parse_cef`` reads it (VRL).

``CEF:Version|Device Vendor|Device Product|Device Version|Signature ID|Name|Severity|Extension``

* Text before ``CEF:`` (a syslog header) is skipped.
* The seven header fields become ``cefVersion``, ``deviceVendor``, ``deviceProduct``,
  ``deviceVersion``, ``deviceEventClassId``, ``name`` and ``severity``; in them ``\\|``
  is a ``|`` and ``\\\\`` a ``\\``; each is trimmed. The seventh ends at a ``|``.
* The extension is ``key=value`` pairs separated by spaces: a key is the word before an
  unescaped ``=`` (no space, ``=``, ``\\`` or ``|`` in it), and its value runs to the
  space before the next key, so values may hold spaces. In a value ``\\=`` is ``=``,
  ``\\\\`` is ``\\``, ``\\n`` and ``\\r`` are a newline, and any other backslash stays.
  **Decision**: an ``=`` that starts no key (``a=b=c``) stays in the value; VRL refuses
  the line.
* Every value is a string; surrounding double quotes are removed; the last value's
  trailing spaces are trimmed; a later pair with the same key wins.
* ``translate_custom_fields``: each custom field and its label (``cs1`` and
  ``cs1Label``, ``cn1``..., ``c6a1``..., ``cfp1``..., ``deviceCustomDate1``...,
  ``flexDate1``, ``flexString1``...) become one pair, the label's value as the key; a
  custom field without its label (or the reverse), or given twice, makes the text not
  CEF, as VRL refuses it.

Linear in the text: ``str.find`` and ``str.split`` over it, never a regular expression.
"""

from __future__ import annotations

from typing import Final

__all__ = ["HEADER_FIELDS", "MAX_PAIRS", "parse_cef"]

HEADER_FIELDS: Final = (
    "cefVersion",
    "deviceVendor",
    "deviceProduct",
    "deviceVersion",
    "deviceEventClassId",
    "name",
    "severity",
)
MAX_PAIRS: Final = 1_000
"""An extension with more pairs is not read (the event passes unchanged)."""

_CUSTOM: Final = (
    *(f"c6a{n}" for n in range(1, 5)),
    *(f"cfp{n}" for n in range(1, 5)),
    *(f"cn{n}" for n in range(1, 4)),
    *(f"cs{n}" for n in range(1, 7)),
    "deviceCustomDate1",
    "deviceCustomDate2",
    "flexDate1",
    "flexString1",
    "flexString2",
)
_LABELS: Final = {f"{name}Label": name for name in _CUSTOM}
_ESCAPES: Final = {"=": "=", "\\": "\\", "n": "\n", "r": "\n"}


def _header(text: str, start: int) -> tuple[list[str], int] | None:
    """The seven header fields from ``start`` and the index after the ``|`` that ends
    the last; None when there are fewer. Each character is looked at once or twice."""
    fields: list[str] = []
    piece: list[str] = []
    index = start
    bar = -1
    while len(fields) < len(HEADER_FIELDS):
        if bar < index:
            bar = text.find("|", index)
            if bar < 0:
                return None
        slash = text.find("\\", index, bar)
        if slash < 0:
            piece.append(text[index:bar])
            fields.append(_unquoted("".join(piece).strip()))
            piece = []
            index = bar + 1
        elif text[slash + 1] in "|\\":  # slash < bar, so the next character exists
            piece.append(text[index:slash])
            piece.append(text[slash + 1])
            index = slash + 2
        else:
            piece.append(text[index : slash + 1])
            index = slash + 1
    return fields, index


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        return value[1:-1]
    return value


def _unescaped(value: str) -> str:
    if "\\" not in value:
        return value
    out: list[str] = []
    index = 0
    while (slash := value.find("\\", index)) >= 0:
        out.append(value[index:slash])
        escaped = _ESCAPES.get(value[slash + 1 : slash + 2])
        if escaped is None:
            out.append("\\")
            index = slash + 1
        else:
            out.append(escaped)
            index = slash + 2
    out.append(value[index:])
    return "".join(out)


def _key(token: str) -> str | None:
    """The key a space-separated token starts with (``key=...``), or None."""
    equals = token.find("=")
    if equals <= 0:
        return None
    key = token[:equals]
    return None if "\\" in key or "|" in key else key


def _extension(text: str) -> list[tuple[str, str]] | None:
    if not text.strip():
        return []
    pairs: list[tuple[str, list[str]]] = []
    for token in text.split(" "):
        key = _key(token)
        if key is not None:
            if len(pairs) >= MAX_PAIRS:
                return None
            pairs.append((key, [token[len(key) + 1 :]]))
        elif pairs:
            pairs[-1][1].append(token)
        elif token:
            return None  # text before the first key: not an extension
    values = [(key, " ".join(parts)) for key, parts in pairs]
    last_key, last = values[-1]
    values[-1] = (last_key, last.rstrip(" "))
    return [(key, _unquoted(_unescaped(value))) for key, value in values]


def _translated(pairs: list[tuple[str, str]]) -> list[tuple[str, str]] | None:
    plain: list[tuple[str, str]] = []
    values: dict[str, str] = {}
    labels: dict[str, str] = {}
    for key, value in pairs:
        if key in _LABELS:
            if _LABELS[key] in labels:
                return None
            labels[_LABELS[key]] = value
        elif key in _CUSTOM:
            if key in values:
                return None
            values[key] = value
        else:
            plain.append((key, value))
    if set(values) != set(labels):
        return None
    return plain + [(labels[name], values[name]) for name in _CUSTOM if name in values]


def parse_cef(text: str, *, translate_custom_fields: bool = False) -> dict[str, str] | None:
    """The fields of a CEF event; None when the text is not one."""
    start = text.find("CEF:")
    if start < 0:
        return None
    header = _header(text, start + 4)
    if header is None:
        return None
    fields, end = header
    pairs = _extension(text[end:])
    if pairs is not None and translate_custom_fields:
        pairs = _translated(pairs)
    if pairs is None:
        return None
    result = dict(zip(HEADER_FIELDS, fields, strict=True))
    result.update(pairs)
    return result
