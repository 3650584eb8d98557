"""Grok's pattern library, written for RE2.

The names and meanings are those of logstash-patterns-core's ``grok-patterns`` and
``linux-syslog`` (the library the platform's ``parse_grok`` loads, through the Rust
``grok`` crate), and the platform's own additions (``JSON_OBJECT``, ``PSQL_LOG``, ...).
A definition may use others as ``%{NAME}`` or capture them as ``%{NAME:field}``; those
captures are fields of whatever pattern uses the definition (``%{SYSLOGBASE}`` yields
``timestamp``, ``logsource``, ``program`` and ``pid``), as in grok.

The originals are written for Oniguruma; RE2 has no lookaround and no atomic groups,
so ``(?<![0-9])`` and ``(?![0-9])`` guards are dropped (or become ``\\b``) and atomic
groups are plain groups. RE2 keeps Perl's leftmost-first preference, so a pattern
matches what grok matches on the lines it was written for.
"""

from __future__ import annotations

from typing import Final

__all__ = ["LIBRARY"]

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_HEX4 = r"[0-9A-Fa-f]{1,4}"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_IPV6 = "|".join(
    (
        rf"(?:{_HEX4}:){{7}}{_HEX4}",
        rf"(?:{_HEX4}:){{1,7}}:",
        rf"(?:{_HEX4}:){{1,6}}:{_HEX4}",
        *(rf"(?:{_HEX4}:){{1,{n}}}(?::{_HEX4}){{1,{7 - n}}}" for n in range(5, 0, -1)),
        rf":(?:(?::{_HEX4}){{1,7}}|:)",
    )
)
_MONTHS = (
    r"\b(?:[Jj]an(?:uary|uar)?|[Ff]eb(?:ruary|ruar)?|[Mm](?:a|ä)?r(?:ch|z)?|[Aa]pr(?:il)?"
    r"|[Mm]a(?:y|i)?|[Jj]un(?:e|i)?|[Jj]ul(?:y|i)?|[Aa]ug(?:ust)?|[Ss]ep(?:tember)?"
    r"|[Oo](?:c|k)?t(?:ober)?|[Nn]ov(?:ember)?|[Dd]e(?:c|z)(?:ember)?)\b"
)
_LEVELS = (
    r"(?:[Aa]lert|ALERT|[Tt]race|TRACE|[Dd]ebug|DEBUG|[Nn]otice|NOTICE|[Ii]nfo|INFO"
    r"|[Ww]arn?(?:ing)?|WARN?(?:ING)?|[Ee]rr?(?:or)?|ERR?(?:OR)?|[Cc]rit?(?:ical)?"
    r"|CRIT?(?:ICAL)?|[Ff]atal|FATAL|[Ss]evere|SEVERE|EMERG(?:ENCY)?|[Ee]merg(?:ency)?)"
)

_BASE: Final[dict[str, str]] = {
    "USERNAME": r"[a-zA-Z0-9._-]+",
    "USER": r"%{USERNAME}",
    "EMAILLOCALPART": r"[a-zA-Z][a-zA-Z0-9_.+\-=:]+",
    "EMAILADDRESS": r"%{EMAILLOCALPART}@%{HOSTNAME}",
    "INT": r"(?:[+-]?(?:[0-9]+))",
    "BASE10NUM": r"[+-]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)",
    "NUMBER": r"(?:%{BASE10NUM})",
    "BASE16NUM": r"[+-]?(?:0x)?[0-9A-Fa-f]+",
    "BASE16FLOAT": r"\b[+-]?(?:0x)?(?:[0-9A-Fa-f]+(?:\.[0-9A-Fa-f]*)?|\.[0-9A-Fa-f]+)\b",
    "POSINT": r"\b(?:[1-9][0-9]*)\b",
    "NONNEGINT": r"\b(?:[0-9]+)\b",
    "WORD": r"\b\w+\b",
    "NOTSPACE": r"\S+",
    "SPACE": r"\s*",
    "DATA": r".*?",
    "GREEDYDATA": r".*",
    "QUOTEDSTRING": r"\"(?:\\.|[^\\\"])*\"|'(?:\\.|[^\\'])*'|`(?:\\.|[^\\`])*`",
    "QS": r"%{QUOTEDSTRING}",
    "UUID": r"[A-Fa-f0-9]{8}-(?:[A-Fa-f0-9]{4}-){3}[A-Fa-f0-9]{12}",
    "URN": r"urn:[0-9A-Za-z][0-9A-Za-z-]{0,31}:(?:%[0-9a-fA-F]{2}|[0-9A-Za-z()+,.:=@;$_!*'/?#-])+",
    # Networking
    "MAC": r"(?:%{CISCOMAC}|%{WINDOWSMAC}|%{COMMONMAC})",
    "CISCOMAC": r"(?:(?:[A-Fa-f0-9]{4}\.){2}[A-Fa-f0-9]{4})",
    "WINDOWSMAC": r"(?:(?:[A-Fa-f0-9]{2}-){5}[A-Fa-f0-9]{2})",
    "COMMONMAC": r"(?:(?:[A-Fa-f0-9]{2}:){5}[A-Fa-f0-9]{2})",
    "IPV6": _IPV6,
    "IPV4": _IPV4,
    "IP": r"(?:%{IPV6}|%{IPV4})",
    "HOSTNAME": (
        r"\b(?:[0-9A-Za-z][0-9A-Za-z-]{0,62})(?:\.(?:[0-9A-Za-z][0-9A-Za-z-]{0,62}))*(?:\.?|\b)"
    ),
    "HOST": r"%{HOSTNAME}",
    "IPORHOST": r"(?:%{IP}|%{HOSTNAME})",
    "HOSTPORT": r"%{IPORHOST}:%{POSINT}",
    # Paths
    "PATH": r"(?:%{UNIXPATH}|%{WINPATH})",
    "UNIXPATH": r"(?:/(?:[\w_%!$@:.,~-]+|\\.)*)+",
    "TTY": r"(?:/dev/(?:pts|tty[pq]?)(?:\w+)?/?(?:[0-9]+))",
    "WINPATH": r"(?:[A-Za-z]+:|\\)(?:\\[^\\?*]*)+",
    "URIPROTO": r"[A-Za-z]+(?:\+[A-Za-z+]+)?",
    "URIHOST": r"%{IPORHOST}(?::%{POSINT:port})?",
    "URIPATH": r"(?:/[A-Za-z0-9$.+!*'(){},~:;=@#%&_\-]*)+",
    "URIPARAM": r"\?[A-Za-z0-9$.+!*'|(){},~@#%&/=:;_?\-\[\]<>]*",
    "URIPATHPARAM": r"%{URIPATH}(?:%{URIPARAM})?",
    "URI": r"%{URIPROTO}://(?:%{USER}(?::[^@]*)?@)?(?:%{URIHOST})?(?:%{URIPATHPARAM})?",
    # Dates and times
    "MONTH": _MONTHS,
    "MONTHNUM": r"(?:0?[1-9]|1[0-2])",
    "MONTHNUM2": r"(?:0[1-9]|1[0-2])",
    "MONTHDAY": r"(?:(?:0[1-9])|(?:[12][0-9])|(?:3[01])|[1-9])",
    "DAY": r"(?:Mon(?:day)?|Tue(?:sday)?|Wed(?:nesday)?|Thu(?:rsday)?|Fri(?:day)?"
    r"|Sat(?:urday)?|Sun(?:day)?)",
    "YEAR": r"(?:\d\d){1,2}",
    "HOUR": r"(?:2[0123]|[01]?[0-9])",
    "MINUTE": r"(?:[0-5][0-9])",
    "SECOND": r"(?:(?:[0-5]?[0-9]|60)(?:[:.,][0-9]+)?)",
    "TIME": r"%{HOUR}:%{MINUTE}(?::%{SECOND})",
    "DATE_US": r"%{MONTHNUM}[/-]%{MONTHDAY}[/-]%{YEAR}",
    "DATE_EU": r"%{MONTHDAY}[./-]%{MONTHNUM}[./-]%{YEAR}",
    "ISO8601_TIMEZONE": r"(?:Z|[+-]%{HOUR}(?::?%{MINUTE}))",
    "ISO8601_SECOND": r"(?:%{SECOND}|60)",
    "TIMESTAMP_ISO8601": (
        r"%{YEAR}-%{MONTHNUM}-%{MONTHDAY}[T ]%{HOUR}:?%{MINUTE}(?::?%{SECOND})?"
        r"%{ISO8601_TIMEZONE}?"
    ),
    "DATE": r"%{DATE_US}|%{DATE_EU}",
    "DATESTAMP": r"%{DATE}[- ]%{TIME}",
    "TZ": r"(?:[APMCE][SD]T|UTC)",
    "DATESTAMP_RFC822": r"%{DAY} %{MONTH} %{MONTHDAY} %{YEAR} %{TIME} %{TZ}",
    "DATESTAMP_RFC2822": r"%{DAY}, %{MONTHDAY} %{MONTH} %{YEAR} %{TIME} %{ISO8601_TIMEZONE}",
    "DATESTAMP_OTHER": r"%{DAY} %{MONTH} %{MONTHDAY} %{TIME} %{TZ} %{YEAR}",
    "DATESTAMP_EVENTLOG": r"%{YEAR}%{MONTHNUM2}%{MONTHDAY}%{HOUR}%{MINUTE}%{SECOND}",
    "HTTPDATE": r"%{MONTHDAY}/%{MONTH}/%{YEAR}:%{TIME} %{INT}",
    # Syslog
    "SYSLOGTIMESTAMP": r"%{MONTH} +%{MONTHDAY} %{TIME}",
    "PROG": r"[\x21-\x5a\x5c\x5e-\x7e]+",
    "SYSLOGPROG": r"%{PROG:program}(?:\[%{POSINT:pid}\])?",
    "SYSLOGHOST": r"%{IPORHOST}",
    "SYSLOGFACILITY": r"<%{NONNEGINT:facility}.%{NONNEGINT:priority}>",
    "SYSLOGBASE": (
        r"%{SYSLOGTIMESTAMP:timestamp} (?:%{SYSLOGFACILITY} )?%{SYSLOGHOST:logsource} "
        r"%{SYSLOGPROG}:"
    ),
    # Log formats
    "COMMONAPACHELOG": (
        r"%{IPORHOST:clientip} %{USER:ident} %{USER:auth} \[%{HTTPDATE:timestamp}\] "
        r'"(?:%{WORD:verb} %{NOTSPACE:request}(?: HTTP/%{NUMBER:httpversion})?'
        r'|%{DATA:rawrequest})" %{NUMBER:response} (?:%{NUMBER:bytes}|-)'
    ),
    "COMBINEDAPACHELOG": r"%{COMMONAPACHELOG} %{QS:referrer} %{QS:agent}",
    "LOGLEVEL": _LEVELS,
}

# logstash-patterns-core's linux-syslog.
_LINUX_SYSLOG: Final[dict[str, str]] = {
    "SYSLOG5424PRINTASCII": r"[!-~]+",
    "SYSLOGBASE2": (
        r"(?:%{SYSLOGTIMESTAMP:timestamp}|%{TIMESTAMP_ISO8601:timestamp8601}) "
        r"(?:%{SYSLOGFACILITY} )?%{SYSLOGHOST:logsource}+(?: %{SYSLOGPROG}:|)"
    ),
    "SYSLOGLINE": r"%{SYSLOGBASE2} %{GREEDYDATA:message}",
    "CRON_ACTION": r"[A-Z ]+",
    "CRONLOG": r"%{SYSLOGBASE} \(%{USER:user}\) %{CRON_ACTION:action} \(%{DATA:message}\)",
    "SYSLOG5424PRI": r"<%{NONNEGINT:syslog5424_pri}>",
    "SYSLOG5424SD": r"\[%{DATA}\]+",
    "SYSLOG5424BASE": (
        r"%{SYSLOG5424PRI}%{NONNEGINT:syslog5424_ver} +"
        r"(?:%{TIMESTAMP_ISO8601:syslog5424_ts}|-) +(?:%{IPORHOST:syslog5424_host}|-) +"
        r"(?:-|%{SYSLOG5424PRINTASCII:syslog5424_app}) +"
        r"(?:-|%{SYSLOG5424PRINTASCII:syslog5424_proc}) +"
        r"(?:-|%{SYSLOG5424PRINTASCII:syslog5424_msgid}) +"
        r"(?:%{SYSLOG5424SD:syslog5424_sd}|-|)"
    ),
    "SYSLOG5424LINE": r"%{SYSLOG5424BASE} +%{GREEDYDATA:syslog5424_msg}",
}

# The platform's additions to its parse_grok (Mezmo's VRL, ``parse_grok.rs``).
_PLATFORM: Final[dict[str, str]] = {
    "JSON_OBJECT": r"\{.*\}",
    "JSON_ARRAY": r"\[.*\]",
    "XML": r"<[\w\"=\s]+>.*</[\w\s]+>",
    "CURLY_BRACKET": r"\{|\}",
    "SQUARE_BRACKET": r"\[|\]",
    "TAB": r"\t",
    "SINGLE_SPACE": r"\s",
    "ANY_CHAR": r".",
    "DOUBLE_QUOTE": r"\"",
    "SINGLE_QUOTE": r"'",
    "PERIOD": r"\.",
    "UTF8_WORD": r"\pL+",
    "SENTENCE": r"[\pL,\":;\s\-]+",
    "OPTIONAL_SENTENCE": r"[\pL,\":;\s\-]*",
    "PSQL_LOG": (
        r"%{TIMESTAMP_ISO8601:timestamp} %{DATA} %{SQUARE_BRACKET}%{INT:pid}"
        r"%{SQUARE_BRACKET} %{EMAILLOCALPART:username}%{NOTSPACE}%{WORD:database} "
        r"%{GREEDYDATA:message}"
    ),
    "GOLANG_LOG": r"%{DATESTAMP:timestamp} %{LOGLEVEL:level} %{GREEDYDATA:message}",
    "ELASTICSEARCH_LOG": (
        r"%{SQUARE_BRACKET}%{TIMESTAMP_ISO8601:timestamp}%{SQUARE_BRACKET}%{SQUARE_BRACKET}"
        r"%{LOGLEVEL:level}%{SPACE}%{SQUARE_BRACKET}%{SQUARE_BRACKET}%{DATA:source}"
        r"%{SQUARE_BRACKET} %{GREEDYDATA:message}"
    ),
}

LIBRARY: Final[dict[str, str]] = {**_BASE, **_LINUX_SYSLOG, **_PLATFORM}
"""Every name a pattern may use, with its definition (which may use others)."""
