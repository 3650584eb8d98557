"""A parser and its options, as the ``parse`` and ``parse-sequentially`` processors
take them: ``{"parser": "regex", "options": {"pattern": "..."}}``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal

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


class ParserSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    parser: ParserName
    options: ParserOptions = ParserOptions()

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
