"""The CEF reader (``tidegate.processing.cef``): the platform's parse_cef examples, the
escapes of the header and of the extension, custom fields and what is not CEF."""

from __future__ import annotations

import pytest
from tests.search.complexity import calls_made

from tidegate.processing.cef import MAX_PAIRS, parse_cef

HEADER = {
    "cefVersion": "0",
    "deviceVendor": "CyberArk",
    "deviceProduct": "PTA",
    "deviceVersion": "12.6",
    "deviceEventClassId": "1",
    "name": "Suspected credentials theft",
    "severity": "8",
}


def test_header_and_extension() -> None:
    line = (
        "CEF:0|CyberArk|PTA|12.6|1|Suspected credentials theft|8|suser=mike2@prod1.domain.com "
        "shost=prod1.domain.com src=1.1.1.1 cs1Label=ExtraData cs1=None "
        "deviceCustomDate1Label=detectionDate deviceCustomDate1=1388577900000"
    )
    assert parse_cef(line) == {
        **HEADER,
        "suser": "mike2@prod1.domain.com",
        "shost": "prod1.domain.com",
        "src": "1.1.1.1",
        "cs1Label": "ExtraData",
        "cs1": "None",
        "deviceCustomDate1Label": "detectionDate",
        "deviceCustomDate1": "1388577900000",
    }


def test_a_syslog_header_before_cef_is_skipped() -> None:
    line = (
        "Sep 29 08:26:10 host CEF:1|Security|threatmanager|1.0|100|worm successfully "
        "stopped|10|src=10.0.0.1 dst=2.1.2.2 spt=1232"
    )
    parsed = parse_cef(line)
    assert parsed is not None
    assert (parsed["cefVersion"], parsed["name"], parsed["spt"]) == (
        "1",
        "worm successfully stopped",
        "1232",
    )


def test_escapes_spaces_quotes_and_empty_values() -> None:
    line = (
        r"CEF:0|sec\\urity|threat\|manager|1.0|100|Detected a \| in message.|10|"
        r"src=10.0.0.1 msg=Detected a threat.\n No action needed act=blocked a \= "
        r'path=C:\Windows\\temp shost= note="quoted value" dst=1.1.1.1   '
    )
    assert parse_cef(line) == {
        "cefVersion": "0",
        "deviceVendor": "sec\\urity",
        "deviceProduct": "threat|manager",
        "deviceVersion": "1.0",
        "deviceEventClassId": "100",
        "name": "Detected a | in message.",
        "severity": "10",
        "src": "10.0.0.1",
        "msg": "Detected a threat.\n No action needed",
        "act": "blocked a =",
        "path": "C:\\Windows\\temp",
        "shost": "",
        "note": "quoted value",
        "dst": "1.1.1.1",
    }


def test_only_a_header_and_empty_header_fields() -> None:
    assert parse_cef("CEF:1|Security|threatmanager|1.0|100|worm stopped|10|") == {
        "cefVersion": "1",
        "deviceVendor": "Security",
        "deviceProduct": "threatmanager",
        "deviceVersion": "1.0",
        "deviceEventClassId": "100",
        "name": "worm stopped",
        "severity": "10",
    }
    parsed = parse_cef("CEF:0| Dev ||x|1|n||a=1")
    assert parsed is not None
    assert (parsed["deviceVendor"], parsed["deviceProduct"], parsed["severity"]) == ("Dev", "", "")


def test_an_equals_sign_that_starts_no_key_stays_in_the_value() -> None:
    parsed = parse_cef("CEF:0|a|b|c|d|e|f|request=/q?a=b&c=d x=1")
    assert parsed is not None
    assert (parsed["request"], parsed["x"]) == ("/q?a=b&c=d", "1")


def test_custom_fields_translated_to_their_labels() -> None:
    line = (
        "CEF:0|Dev|firewall|2.2|1|Connection denied|5|c6a1=2345:0425:2CA1::23b5 "
        "c6a1Label=Device IPv6 Address cs2=web cs2Label=zone src=1.2.3.4"
    )
    assert parse_cef(line, translate_custom_fields=True) == {
        "cefVersion": "0",
        "deviceVendor": "Dev",
        "deviceProduct": "firewall",
        "deviceVersion": "2.2",
        "deviceEventClassId": "1",
        "name": "Connection denied",
        "severity": "5",
        "src": "1.2.3.4",
        "Device IPv6 Address": "2345:0425:2CA1::23b5",
        "zone": "web",
    }
    # Untranslated, they stay as they came.
    assert parse_cef(line)["cs2Label"] == "zone"  # type: ignore[index]


@pytest.mark.parametrize(
    "extension",
    [
        "cs1=value",  # no label
        "cs1Label=label",  # no value
        "cs1=a cs1Label=x cs1=b",  # twice
        "cs1Label=x cs1Label=y cs1=a",
    ],
)
def test_a_custom_field_without_its_pair_is_not_translated_cef(extension: str) -> None:
    assert parse_cef(f"CEF:0|a|b|c|d|e|f|{extension}", translate_custom_fields=True) is None
    assert parse_cef(f"CEF:0|a|b|c|d|e|f|{extension}") is not None


@pytest.mark.parametrize(
    "text",
    [
        "no header here",
        "CEF:0|a|b|c|d|e",  # six header fields
        "CEF:0|a|b|c|d|e|f",  # the seventh never ends
        "CEF:0|a|b|c|d|e|f|junk before=the first key",
        "CEF:0|a|b|c|d|e|f| \\=x",
        "CEF:0|a|b|c|d|e|f|" + " ".join(f"k{n}=v" for n in range(MAX_PAIRS + 1)),
    ],
)
def test_what_is_not_cef(text: str) -> None:
    assert parse_cef(text) is None


def test_reading_is_linear_in_the_text() -> None:
    def work(n: int) -> int:
        header = "CEF:0|" + "\\x" * n + "|b|c|d|e|f|"
        extension = " ".join(f"k{i}=a\\=b" for i in range(n // 10))
        return calls_made(lambda: parse_cef(header + extension))

    small, large = work(400), work(800)
    assert large <= 2.2 * small
