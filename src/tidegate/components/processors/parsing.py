"""A parser and its options, as the ``parse`` and ``parse-sequentially`` processors
take them: ``{"parser": "regex", "options": {"pattern": "..."}}``.

The platform's Terraform provider names parsers by their VRL function
(``modelutils/parsers.go``: ``parse_json``, ``parse_nginx_log``, ...) with its own
option names; ``_platform_parser`` reads those it has a parser for (``VRL_NAMES``) and
refuses the others by name. What was sent is stored and read back.

Tenant patterns and formats (``regex``, ``grok``, ``timestamp``) are compiled once,
when the configuration is validated, on RE2: a bad one is a 400 at
``/user_config/options/<option>`` saying why."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from tidegate.processing import parsers, vrl_parsers
from tidegate.processing.cef import parse_cef
from tidegate.processing.grok import MAX_PATTERN_CHARS, TemplatePattern, TemplatePatternError
from tidegate.processing.linear_regex import CapturingRegex, RegexError
from tidegate.processing.timestamp_format import (
    MAX_FORMAT,
    TimestampFormat,
    TimestampFormatError,
)
from tidegate.processing.user_agent import UserAgentMode, parse_user_agent, prepare
from tidegate.processing.vrl_parsers import (
    APACHE_ERROR_TIME,
    NGINX_ACCESS_TIME,
    NGINX_ERROR_TIME,
)

__all__ = ["ParserName", "ParserOptions", "ParserSpec", "make_parser"]

ParserName = Literal[
    "json",
    "key_value",
    "regex",
    "grok",
    "apache",
    "nginx",
    "syslog",
    "csv_row",
    "cef",
    "timestamp",
    "query_string",
    "url",
    "tokens",
    "int",
    "klog",
    "glog",
    "linux_authorization",
    "aws_vpc_flow_log",
    "aws_cloudwatch_log",
    "aws_alb_log",
    "user_agent",
]
Delimiter = Annotated[str, Field(min_length=1, max_length=8)]
ACCESS_LOG_FORMATS: Final = ("common", "combined", "error")


class ParserOptions(BaseModel):
    """Options of the parsers; each parser reads its own and ignores the others."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pattern: Annotated[str, Field(min_length=1, max_length=10_000)] | None = Field(
        default=None,
        description="regex: RE2 syntax, named groups `(?P<name>...)`; grok: `%{NAME:field}` "
        "tokens of grok's library and RE2",
    )
    case_sensitive: bool = Field(default=True, description="regex")
    format: Annotated[str, Field(min_length=1, max_length=MAX_FORMAT)] | None = Field(
        default=None,
        description="apache, nginx: the log format, combined (default), common or error "
        "(the error log); timestamp: a strftime format (chrono's specifiers), or `Custom` "
        "with `custom_format`",
    )
    custom_format: Annotated[str, Field(min_length=1, max_length=MAX_FORMAT)] | None = Field(
        default=None,
        description="timestamp: the strftime format when `format` is Custom; apache, nginx "
        "with format error: the time's strftime format (default, as VRL's: "
        f"`{APACHE_ERROR_TIME}` for apache, `{NGINX_ERROR_TIME}` for nginx)",
    )
    translate_custom_fields: bool = Field(
        default=False, description="cef: custom fields (cs1...) keyed by their labels"
    )
    field_delimiter: Delimiter = Field(default=" ", description="key_value")
    key_value_delimiter: Delimiter = Field(default="=", description="key_value")
    delimiter: Annotated[str, Field(min_length=1, max_length=1)] = Field(
        default=",", description="csv_row"
    )
    mode: UserAgentMode = Field(
        default="fast",
        description="user_agent: fast (woothee, VRL's default), reliable (uap-core when "
        "woothee finds no browser or OS family), enriched (both, the full schema)",
    )
    headers: (
        Annotated[list[Annotated[str, Field(max_length=256)]], Field(max_length=1000)] | None
    ) = Field(default=None, description="csv_row: column names (else a list of strings)")


VRL_NAMES: Final = {
    "parse_json": "json",
    "parse_key_value": "key_value",
    "parse_regex": "regex",
    "parse_grok": "grok",
    "parse_apache_log": "apache",
    "parse_nginx_log": "nginx",
    "parse_common_log": "apache",
    "parse_syslog": "syslog",
    "parse_csv": "csv_row",
    "parse_cef": "cef",
    "parse_timestamp": "timestamp",
    "parse_query_string": "query_string",
    "parse_url": "url",
    "parse_tokens": "tokens",
    "parse_int": "int",
    "parse_klog": "klog",
    "parse_glog": "glog",
    "parse_linux_authorization": "linux_authorization",
    "parse_aws_vpc_flow_log": "aws_vpc_flow_log",
    "parse_aws_cloudwatch_log_subscription_message": "aws_cloudwatch_log",
    "parse_aws_alb_log": "aws_alb_log",
    "parse_user_agent": "user_agent",
}
# Parsers of no option (the provider sends none for them): VRL's defaults.
_PLAIN: Final[dict[str, Callable[[str], Any]]] = {
    "json": parsers.parse_json,
    "syslog": parsers.parse_syslog,
    "query_string": vrl_parsers.parse_query_string,
    "url": vrl_parsers.parse_url,
    "tokens": vrl_parsers.parse_tokens,
    "int": vrl_parsers.parse_int,
    "klog": vrl_parsers.parse_klog,
    "glog": vrl_parsers.parse_glog,
    "linux_authorization": vrl_parsers.parse_linux_authorization,
    "aws_vpc_flow_log": vrl_parsers.parse_aws_vpc_flow_log,
    "aws_cloudwatch_log": vrl_parsers.parse_aws_cloudwatch_log_subscription_message,
    "aws_alb_log": vrl_parsers.parse_aws_alb_log,
}
# The platform's time options (``timestamp_format``, ``custom_timestamp_format``) are
# read for an error log only: an access log's time is read in its own standard form
# (``%d/%b/%Y:%H:%M:%S %z``) whatever they say.
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
    time_format = options.pop("timestamp_format", None)
    custom = options.pop("custom_timestamp_format", None)
    if name == "parse_common_log":
        options.setdefault("format", "common")
    if options.get("format") == "error" and name in ("parse_apache_log", "parse_nginx_log"):
        # An error log's time is read in the format given (``Custom``: the custom one),
        # as VRL's ``timestamp_format``; an access log's in its standard form.
        chosen = custom if time_format == "Custom" else time_format
        if chosen is not None:
            options["custom_format"] = chosen
    if name == "parse_csv" and "field_names" in options:
        options["headers"] = options.pop("field_names")
    if name == "parse_regex":
        if options.pop("crlf_newline", False):
            raise ValueError("parser 'parse_regex': crlf_newline is not supported")
        flags = "".join(flag for key, flag in _REGEX_FLAGS.items() if options.pop(key, False))
        if flags and isinstance(options.get("pattern"), str):
            options["pattern"] = flags + options["pattern"]
    vrl_fields = name in ("parse_apache_log", "parse_common_log", "parse_nginx_log")
    return {**data, "parser": VRL_NAMES[name], "options": options, "vrl_fields": vrl_fields}


def _option_error(option: str, message: str, value: Any) -> ValidationError:
    """A refusal located at ``options/<option>`` (raised from the spec's validator,
    which alone knows which parser the options are for)."""
    return ValidationError.from_exception_data(
        "ParserSpec",
        [
            {
                "type": "value_error",
                "loc": ("options", option),
                "input": value,
                "ctx": {"error": ValueError(message)},
            }
        ],
    )


class ParserSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    parser: ParserName
    options: ParserOptions = ParserOptions()
    # Set when the spec came in the platform's shape (``parse_apache_log``,
    # ``parse_common_log``, ``parse_nginx_log``): the access logs' fields as VRL names
    # them (nginx's ``client, request, referer, compression``; apache's ``identity``),
    # where tidegate's own ``apache`` and ``nginx`` keep the names they always had.
    vrl_fields: SkipJsonSchema[bool] = False
    _compiled: Any = PrivateAttr(default=None)

    _platform = model_validator(mode="before")(_platform_parser)

    @model_validator(mode="after")
    def _complete(self) -> ParserSpec:
        options = self.options
        if self.parser in ("regex", "grok"):
            if options.pattern is None:
                raise ValueError(f"the {self.parser} parser needs options.pattern")
            self._compiled = _pattern(self.parser, options)
        elif self.parser == "timestamp":
            self._compiled = _time_format(options)
        elif self.parser in ("apache", "nginx"):
            if options.format not in (None, *ACCESS_LOG_FORMATS):
                message = "the log format is combined, common or error"
                raise _option_error("format", message, options.format)
            if options.format == "error":
                default = APACHE_ERROR_TIME if self.parser == "apache" else NGINX_ERROR_TIME
                self._compiled = _log_time_format(options.custom_format or default)
            elif self.vrl_fields and self.parser == "nginx":
                if options.format == "common":  # VRL's parse_nginx_log has no common
                    message = "parse_nginx_log's format is combined or error"
                    raise _option_error("format", message, options.format)
                self._compiled = _log_time_format(NGINX_ACCESS_TIME)
        return self

    @property
    def compiled(self) -> Any:
        """The compiled pattern (regex, grok) or format (timestamp), else None."""
        return self._compiled


def _pattern(parser: str, options: ParserOptions) -> CapturingRegex | TemplatePattern:
    pattern = options.pattern
    assert pattern is not None
    if parser == "grok":
        if len(pattern) > MAX_PATTERN_CHARS:
            message = f"not a grok pattern: longer than {MAX_PATTERN_CHARS} characters"
            raise _option_error("pattern", message, pattern)
        try:
            return TemplatePattern(pattern)
        except TemplatePatternError as error:
            raise _option_error("pattern", f"not a grok pattern: {error}", pattern) from None
    try:
        compiled = CapturingRegex(pattern, case_sensitive=options.case_sensitive)
    except RegexError as error:
        raise _option_error("pattern", f"not a valid RE2 pattern: {error}", pattern) from None
    if not compiled.group_names:
        raise _option_error("pattern", "the pattern has no named group (?P<name>...)", pattern)
    return compiled


def _time_format(options: ParserOptions) -> TimestampFormat:
    """The timestamp parser's format: ``format``, or ``custom_format`` when ``format``
    is ``Custom`` (the platform's Terraform provider)."""
    option, text = "format", options.format
    if text == "Custom":
        option, text = "custom_format", options.custom_format
    if text is None:
        raise _option_error(option, f"the timestamp parser needs options.{option}", None)
    try:
        return TimestampFormat(text)
    except TimestampFormatError as error:
        raise _option_error(option, f"not a timestamp format: {error}", text) from None


def _log_time_format(text: str) -> TimestampFormat:
    """An access or error log's time format (``custom_format``, else VRL's default)."""
    try:
        return TimestampFormat(text)
    except TimestampFormatError as error:
        message = f"not a timestamp format: {error}"
        raise _option_error("custom_format", message, text) from None


def _vrl_apache(text: str, *, log_format: str) -> dict[str, Any] | None:
    """An apache access log as VRL's ``parse_apache_log`` names its fields: the ident
    is ``identity``."""
    found = parsers.parse_access_log(text, log_format=log_format)
    if found is not None and "ident" in found:
        found = {("identity" if key == "ident" else key): value for key, value in found.items()}
    return found


def make_parser(spec: ParserSpec) -> Callable[[str], Any]:
    """The parse function of a spec: text -> parsed value, or None when not parsed."""
    options = spec.options
    if spec.parser in _PLAIN:
        return _PLAIN[spec.parser]
    if spec.parser == "key_value":
        return partial(
            parsers.parse_key_value,
            field_delimiter=options.field_delimiter,
            key_value_delimiter=options.key_value_delimiter,
        )
    if spec.parser == "regex":
        return partial(parsers.parse_regex, regex=spec.compiled)
    if spec.parser == "grok":
        return partial(parsers.parse_grok, pattern=spec.compiled)
    if spec.parser == "timestamp":
        return partial(parsers.parse_timestamp, time_format=spec.compiled)
    if spec.parser == "user_agent":
        prepare(options.mode)
        return partial(parse_user_agent, mode=options.mode)
    if spec.parser == "cef":
        return partial(parse_cef, translate_custom_fields=options.translate_custom_fields)
    if spec.parser in ("apache", "nginx") and options.format == "error":
        error_log = (
            vrl_parsers.parse_apache_error_log
            if spec.parser == "apache"
            else vrl_parsers.parse_nginx_error_log
        )
        return partial(error_log, time_format=spec.compiled)
    if spec.vrl_fields and spec.parser == "nginx":
        return partial(vrl_parsers.parse_nginx_combined_log, time_format=spec.compiled)
    if spec.vrl_fields:  # apache's as VRL names it
        return partial(_vrl_apache, log_format=options.format or "combined")
    if spec.parser in ("apache", "nginx"):
        return partial(parsers.parse_access_log, log_format=options.format or "combined")
    return partial(parsers.parse_csv_row, delimiter=options.delimiter, headers=options.headers)
