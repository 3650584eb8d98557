"""A parser and its options, as the ``parse`` and ``parse-sequentially`` processors
take them: ``{"parser": "regex", "options": {"pattern": "..."}}``.

The platform's Terraform provider names parsers by their VRL function
(``modelutils/parsers.go``: ``parse_json``, ``parse_nginx_log``, ...) with its own
option names; ``_platform_parser`` reads those it has a parser for (``VRL_NAMES``) and
refuses the others by name. What was sent is stored and read back."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tidegate.processing import parsers
from tidegate.processing.linear_regex import CapturingRegex, RegexError

__all__ = ["ParserName", "ParserOptions", "ParserSpec", "make_parser"]

ParserName = Literal["json", "key_value", "regex", "apache", "nginx", "syslog", "csv_row"]
Delimiter = Annotated[str, Field(min_length=1, max_length=8)]


class ParserOptions(BaseModel):
    """Options of the parsers; each parser reads its own and ignores the others."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pattern: Annotated[str, Field(min_length=1, max_length=10_000)] | None = Field(
        default=None, description="regex: RE2 syntax, named groups `(?P<name>...)`"
    )
    case_sensitive: bool = Field(default=True, description="regex")
    format: Literal["common", "combined"] = Field(
        default="combined", description="apache, nginx: the access log format"
    )
    field_delimiter: Delimiter = Field(default=" ", description="key_value")
    key_value_delimiter: Delimiter = Field(default="=", description="key_value")
    delimiter: Annotated[str, Field(min_length=1, max_length=1)] = Field(
        default=",", description="csv_row"
    )
    headers: (
        Annotated[list[Annotated[str, Field(max_length=256)]], Field(max_length=1000)] | None
    ) = Field(default=None, description="csv_row: column names (else a list of strings)")

    @field_validator("pattern")
    @classmethod
    def _linear(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                compiled = CapturingRegex(pattern)
            except RegexError as error:
                raise ValueError(f"not a valid RE2 pattern: {error}") from None
            if not compiled.group_names:
                raise ValueError("the pattern has no named group (?P<name>...)")
        return pattern


VRL_NAMES: Final = {
    "parse_json": "json",
    "parse_key_value": "key_value",
    "parse_regex": "regex",
    "parse_apache_log": "apache",
    "parse_nginx_log": "nginx",
    "parse_common_log": "apache",
    "parse_syslog": "syslog",
    "parse_csv": "csv_row",
}
# Options of the platform read as no-ops: an access log's time is read in its own
# standard form (``%d/%b/%Y:%H:%M:%S %z``) whatever they say.
_IGNORED_OPTIONS: Final = ("timestamp_format", "custom_timestamp_format")
_REGEX_FLAGS: Final = {"multiline": "(?m)", "match_newline": "(?s)"}


def _platform_parser(data: Any) -> Any:
    """``{"parser": "parse_nginx_log", "options": {...}}`` -> tidegate's spec."""
    if not isinstance(data, dict) or not isinstance(data.get("parser"), str):
        return data
    name = data["parser"]
    if not name.startswith("parse_"):
        return data
    if name not in VRL_NAMES:
        raise ValueError(f"parser {name!r} is not supported by tidegate")
    options = dict(data.get("options") or {})
    for key in _IGNORED_OPTIONS:
        options.pop(key, None)
    if name == "parse_common_log":
        options.setdefault("format", "common")
    if options.get("format") == "error":
        raise ValueError(f"parser {name!r}: the error log format is not supported")
    if name == "parse_csv" and "field_names" in options:
        options["headers"] = options.pop("field_names")
    if name == "parse_regex":
        if options.pop("crlf_newline", False):
            raise ValueError("parser 'parse_regex': crlf_newline is not supported")
        flags = "".join(flag for key, flag in _REGEX_FLAGS.items() if options.pop(key, False))
        if flags and isinstance(options.get("pattern"), str):
            options["pattern"] = flags + options["pattern"]
    return {**data, "parser": VRL_NAMES[name], "options": options}


class ParserSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    parser: ParserName
    options: ParserOptions = ParserOptions()

    _platform = model_validator(mode="before")(_platform_parser)

    @model_validator(mode="after")
    def _complete(self) -> ParserSpec:
        if self.parser == "regex" and self.options.pattern is None:
            raise ValueError("the regex parser needs options.pattern")
        return self


def make_parser(spec: ParserSpec) -> Callable[[str], Any]:
    """The parse function of a spec: text -> parsed value, or None when not parsed."""
    options = spec.options
    if spec.parser == "json":
        return parsers.parse_json
    if spec.parser == "key_value":
        return partial(
            parsers.parse_key_value,
            field_delimiter=options.field_delimiter,
            key_value_delimiter=options.key_value_delimiter,
        )
    if spec.parser == "regex":
        assert options.pattern is not None
        regex = CapturingRegex(options.pattern, case_sensitive=options.case_sensitive)
        return partial(parsers.parse_regex, regex=regex)
    if spec.parser in ("apache", "nginx"):
        return partial(parsers.parse_access_log, log_format=options.format)
    if spec.parser == "syslog":
        return parsers.parse_syslog
    return partial(parsers.parse_csv_row, delimiter=options.delimiter, headers=options.headers)
