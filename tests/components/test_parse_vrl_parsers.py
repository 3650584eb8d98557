"""The ``parse`` processor's VRL parsers beyond the classic ones (``parse_query_string``,
``parse_url``, ``parse_tokens``, ``parse_int``, ``parse_klog``, ``parse_glog``,
``parse_linux_authorization``, ``parse_aws_vpc_flow_log``,
``parse_aws_cloudwatch_log_subscription_message``, ``parse_aws_alb_log``): VRL's
documented examples (``docs/generated/<name>.json``) give exactly VRL's answer, a text
not of the format fails cleanly (the event passes unchanged), and the provider's body
(``processors/parse.go``: the VRL name, no options, ``target_field: ""``) builds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from tests.components.helpers import build, run

from tidegate.errors import ValidationFailed
from tidegate.processing import vrl_parsers
from tidegate.processing.parsers import MAX_PAIRS

TOKENS_DOC = r'A sentence "with \"a\" sentence inside" and [some brackets]'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("foo=1&bar=2", {"foo": "1", "bar": "2"}),
        ("foo=%2B1&bar=2&bar=3&xyz", {"bar": ["2", "3"], "foo": "+1", "xyz": ""}),
        ("?foo%5b%5d=1&foo%5b%5d=2", {"foo[]": ["1", "2"]}),
        ("a=1&a=2&a=3&&b=x+y", {"a": ["1", "2", "3"], "b": "x y"}),
        ("", {}),
    ],
)
def test_parse_query_string_as_vrl_documents_it(text: str, expected: Any) -> None:
    assert vrl_parsers.parse_query_string(text) == expected


def test_parse_query_string_reads_a_bounded_number_of_pairs() -> None:
    parsed = vrl_parsers.parse_query_string("&".join(f"k{i}=v" for i in range(5000)))
    assert len(parsed) == MAX_PAIRS


def test_parse_url_as_vrl_documents_it() -> None:
    assert vrl_parsers.parse_url("ftp://foo:bar@example.com:4343/foobar?hello=world#123") == {
        "fragment": "123",
        "host": "example.com",
        "password": "bar",
        "path": "/foobar",
        "port": 4343,
        "query": {"hello": "world"},
        "scheme": "ftp",
        "username": "foo",
    }
    assert vrl_parsers.parse_url("https://example.com", default_known_ports=True) == {
        "fragment": None,
        "host": "example.com",
        "password": "",
        "path": "/",
        "port": 443,
        "query": {},
        "scheme": "https",
        "username": "",
    }
    # Without default_known_ports (what the provider sends), a scheme's own port is null.
    assert vrl_parsers.parse_url("https://EXAMPLE.com:443")["port"] is None  # type: ignore[index]
    parsed = vrl_parsers.parse_url("https://www.café.com/a?x=1&x=2")
    assert parsed is not None
    assert (parsed["host"], parsed["query"]) == ("www.xn--caf-dma.com", {"x": "2"})
    parsed = vrl_parsers.parse_url("http://[::1]:8080/x")
    assert parsed is not None
    assert (parsed["host"], parsed["port"]) == ("[::1]", 8080)


@pytest.mark.parametrize(
    "text",
    ["example.com/path", "", "://x", "http://", "http://a:99999/", "http://a:x/", "http://a b/"],
)
def test_parse_url_refuses_what_is_not_a_url(text: str) -> None:
    assert vrl_parsers.parse_url(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TOKENS_DOC, ["A", "sentence", r"with \"a\" sentence inside", "and", "some brackets"]),
        ("foo\t bar     baz", ["foo", "bar", "baz"]),
        ('foo "" - x', ["foo", None, None, "x"]),
        ('a "unclosed b', ["a", '"unclosed b']),
        ('a "bad \\n escape"', ["a", '"bad \\n escape"']),
        ("a [b\\]c] d", ["a", "b\\]c", "d"]),
        ("", []),
    ],
)
def test_parse_tokens_as_vrl_tokenizes(text: str, expected: list[Any]) -> None:
    assert vrl_parsers.parse_tokens(text) == expected


def test_parse_tokens_is_bounded() -> None:
    assert len(vrl_parsers.parse_tokens("a " * 5000)) == MAX_PAIRS


@pytest.mark.parametrize(
    ("text", "expected"),
    [("-42", -42), ("0b1001", 9), ("0o42", 34), ("0x2a", 42), ("010", 8), ("+7", 7)],
)
def test_parse_int_as_vrl_documents_it(text: str, expected: int) -> None:
    assert vrl_parsers.parse_int(text) == expected


def test_parse_int_with_a_base_and_refusals() -> None:
    assert vrl_parsers.parse_int("2a", base=17) == 44
    for text in ["", "-", "1_0", " 1", "1.5", "0x", "09", "9" * 30, "x" * 100, "٣"]:
        assert vrl_parsers.parse_int(text) is None, text


def test_parse_klog_as_vrl_documents_it() -> None:
    line = "I0505 17:59:40.692994   28133 klog.go:70] hello from klog"
    assert vrl_parsers.parse_klog(line, now=datetime(2026, 11, 28, tzinfo=UTC)) == {
        "file": "klog.go",
        "id": 28133,
        "level": "info",
        "line": 70,
        "message": "hello from klog",
        "timestamp": "2026-05-05T17:59:40.692994Z",
    }
    december = "E1231 23:59:59.000001 1 a.go:1] late  "
    parsed = vrl_parsers.parse_klog(december, now=datetime(2027, 1, 2, tzinfo=UTC))
    assert parsed is not None
    assert (parsed["timestamp"], parsed["level"], parsed["message"]) == (
        "2026-12-31T23:59:59.000001Z",
        "error",
        "late",
    )


def test_parse_glog_as_vrl_documents_it() -> None:
    assert vrl_parsers.parse_glog("I20210131 14:48:54.411655 15520 main.c++:9] Hello world!") == {
        "file": "main.c++",
        "id": 15520,
        "level": "info",
        "line": 9,
        "message": "Hello world!",
        "timestamp": "2021-01-31T14:48:54.411655Z",
    }


@pytest.mark.parametrize(
    "text",
    [
        "X0505 17:59:40.692994 1 klog.go:70] unknown level",
        "I1305 17:59:40.692994 1 klog.go:70] month 13",
        "I0505 17:59:40 1 klog.go:70] no microseconds",
        "I0505 17:59:40.692994 1 klog.go] no line",
        "hello",
        "I0505 17:59:40.692994 1 " + "a:1" * 100_000 + " no bracket",
    ],
)
def test_parse_klog_refuses_other_lines(text: str) -> None:
    assert vrl_parsers.parse_klog(text) is None
    assert vrl_parsers.parse_glog(text.replace("I0505", "I20210505", 1)) is None


AUTH_LINE = (
    "Mar 23 01:49:58 localhost sshd[1111]: Accepted publickey for eng from 10.1.1.1 "
    "port 8888 ssh2: RSA SHA256:foobar"
)


def test_parse_linux_authorization_as_vrl_documents_it() -> None:
    now = datetime(2026, 11, 28, tzinfo=UTC)
    assert vrl_parsers.parse_linux_authorization(AUTH_LINE, now=now) == {
        "appname": "sshd",
        "hostname": "localhost",
        "message": "Accepted publickey for eng from 10.1.1.1 port 8888 ssh2: RSA SHA256:foobar",
        "procid": 1111,
        "timestamp": "2026-03-23T01:49:58Z",
    }
    named = vrl_parsers.parse_linux_authorization("Mar 23 01:49:58 h su[x1]: ok", now=now)
    assert named is not None
    assert named["procid"] == "x1"
    for text in ["", "sshd: no time", "Mar 99 01:49:58"]:
        assert vrl_parsers.parse_linux_authorization(text) is None, text


VPC_CUSTOM = (
    "5 52.95.128.179 10.0.0.71 80 34210 6 1616729292 1616729349 IPv4 14 15044 "
    "123456789012 vpc-abcdefab012345678 subnet-aaaaaaaa012345678 i-0c50d5961bcb2d47b "
    "eni-1235b8ca123456789 ap-southeast-2 apse2-az3 - - ACCEPT 19 52.95.128.179 "
    "10.0.0.71 S3 - - ingress OK"
)


def test_parse_aws_vpc_flow_log_as_vrl_documents_it() -> None:
    line = "2 123456789010 eni-1235b8ca123456789 - - - - - - - 1431280876 1431280934 - NODATA"
    assert vrl_parsers.parse_aws_vpc_flow_log(line) == {
        "version": 2,
        "account_id": "123456789010",
        "interface_id": "eni-1235b8ca123456789",
        "srcaddr": None,
        "dstaddr": None,
        "srcport": None,
        "dstport": None,
        "protocol": None,
        "packets": None,
        "bytes": None,
        "start": 1431280876,
        "end": 1431280934,
        "action": None,
        "log_status": "NODATA",
    }
    accepted = "2 1 eni-1 10.0.0.1 10.0.0.2 443 49152 6 10 8400 1 2 ACCEPT OK"
    parsed = vrl_parsers.parse_aws_vpc_flow_log(accepted)
    assert parsed is not None
    assert (parsed["srcport"], parsed["bytes"], parsed["action"]) == (443, 8400, "ACCEPT")


@pytest.mark.parametrize(
    "text",
    [
        VPC_CUSTOM,  # a custom format: the provider sends no format to read it with
        "2 1 eni-1 - - - - - - - 1 2 - NODATA extra",
        "2 1 eni-1 - - - - - - - 1 2 -",
        "2 1 eni-1 - - - - - -  1 2 - NODATA",  # two spaces: an empty bytes
        "v2 1 eni-1 - - - - - - - 1 2 - NODATA",
        "2 1 eni-1 - - - - - - - 1_0 2 - NODATA",
        "2 1 eni-1 - - - - - - - 99999999999999999999 2 - NODATA",
        "",
    ],
)
def test_parse_aws_vpc_flow_log_refuses_other_lines(text: str) -> None:
    assert vrl_parsers.parse_aws_vpc_flow_log(text) is None


CLOUDWATCH_EVENT = (
    '{"bytes":26780,"datetime":"14/Sep/2020:11:45:41-0400","host":"157.130.216.193",'
    '"method":"PUT","protocol":"HTTP/1.0",'
    '"referer":"https://www.principalcross-platform.io/markets/ubiquitous",'
    '"request":"/expedite/convergence","source_type":"stdin","status":301,'
    '"user-identifier":"-"}'
)
CLOUDWATCH: dict[str, Any] = {
    "messageType": "DATA_MESSAGE",
    "owner": "111111111111",
    "logGroup": "test",
    "logStream": "test",
    "subscriptionFilters": ["Destination"],
    "logEvents": [
        {
            "id": "35683658089614582423604394983260738922885519999578275840",
            "timestamp": 1600110569039,
            "message": CLOUDWATCH_EVENT,
        }
    ],
}


def test_parse_aws_cloudwatch_log_subscription_message_as_vrl_documents_it() -> None:
    text = orjson.dumps(CLOUDWATCH).decode()
    assert vrl_parsers.parse_aws_cloudwatch_log_subscription_message(text) == {
        "log_events": [
            {
                "id": "35683658089614582423604394983260738922885519999578275840",
                "message": CLOUDWATCH_EVENT,
                "timestamp": "2020-09-14T19:09:29.039Z",
            }
        ],
        "log_group": "test",
        "log_stream": "test",
        "message_type": "DATA_MESSAGE",
        "owner": "111111111111",
        "subscription_filters": ["Destination"],
    }


@pytest.mark.parametrize(
    "change",
    [
        {"messageType": "OTHER"},
        {"owner": 111111111111},
        {"extra": 1},
        {"subscriptionFilters": "Destination"},
        {"subscriptionFilters": [1]},
        {"logEvents": {}},
        {"logEvents": [{"id": "1", "timestamp": "1600110569039", "message": "m"}]},
        {"logEvents": [{"id": "1", "timestamp": 10**18, "message": "m"}]},
        {"logEvents": [{"id": "1", "timestamp": 1, "message": "m", "more": 1}]},
        {"logEvents": [{"id": 1, "timestamp": 1, "message": "m"}]},
        {"logEvents": [{"id": "1", "timestamp": True, "message": "m"}]},
    ],
)
def test_parse_aws_cloudwatch_log_subscription_message_refuses_other_shapes(
    change: dict[str, Any],
) -> None:
    text = orjson.dumps({**CLOUDWATCH, **change}).decode()
    assert vrl_parsers.parse_aws_cloudwatch_log_subscription_message(text) is None
    missing = {key: value for key, value in CLOUDWATCH.items() if key != "logStream"}
    assert (
        vrl_parsers.parse_aws_cloudwatch_log_subscription_message(orjson.dumps(missing).decode())
        is None
    )
    for other in ["", "[]", "42", "{"]:
        assert vrl_parsers.parse_aws_cloudwatch_log_subscription_message(other) is None


ALB = (
    "http 2018-11-30T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 "
    "192.168.131.39:2817 - 0.000 0.001 0.000 200 200 34 366 "
    '"GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - - '
    "arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/"
    '73e2d6bc24d8a067 "Root=1-58337364-23a8c76965a2ef7629b185e3" "-" "-" 0 '
    '2018-11-30T22:22:48.364000Z "forward" "-" "-" "-" "-" "-" "-"'
)
ALB_READ = {
    "actions_executed": "forward",
    "chosen_cert_arn": None,
    "classification": None,
    "classification_reason": None,
    "client_host": "192.168.131.39:2817",
    "domain_name": None,
    "elb": "app/my-loadbalancer/50dc6c495c0c9188",
    "elb_status_code": "200",
    "error_reason": None,
    "matched_rule_priority": "0",
    "received_bytes": 34,
    "redirect_url": None,
    "request_creation_time": "2018-11-30T22:22:48.364000Z",
    "request_method": "GET",
    "request_processing_time": 0.0,
    "request_protocol": "HTTP/1.1",
    "request_url": "http://www.example.com:80/",
    "response_processing_time": 0.0,
    "sent_bytes": 366,
    "ssl_cipher": None,
    "ssl_protocol": None,
    "target_group_arn": (
        "arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/"
        "73e2d6bc24d8a067"
    ),
    "target_host": None,
    "target_port_list": [],
    "target_processing_time": 0.001,
    "target_status_code": "200",
    "target_status_code_list": [],
    "timestamp": "2018-11-30T22:23:00.186641Z",
    "trace_id": "Root=1-58337364-23a8c76965a2ef7629b185e3",
    "traceability_id": None,
    "type": "http",
    "user_agent": "curl/7.46.0",
}


def test_parse_aws_alb_log_as_vrl_documents_it() -> None:
    assert vrl_parsers.parse_aws_alb_log(ALB) == ALB_READ
    assert vrl_parsers.parse_aws_alb_log(ALB + " TID_12345") == {
        **ALB_READ,
        "traceability_id": "TID_12345",
    }
    lists = ALB.replace('"-" "-" "-" "-" "-" "-"', '"-" "-" "10.0.0.1:80" 200 "-" "-"')
    parsed = vrl_parsers.parse_aws_alb_log(lists.replace('"curl/7.46.0"', '"a \\"b\\""'))
    assert parsed is not None
    assert (parsed["target_port_list"], parsed["target_status_code_list"]) == (
        ["10.0.0.1:80"],
        ["200"],
    )
    assert parsed["user_agent"] == 'a "b"'


@pytest.mark.parametrize(
    "text",
    [
        # VRL's second example sets strict_mode false, which the provider cannot send:
        # strict (VRL's default), the trailing fields make the line unparsed.
        ALB + ' TID_12345 "-" "-" "-"',
        ALB[:-4],
        ALB.replace(" 34 366 ", " 34 - "),
        ALB.replace(" 0.001 ", " - "),
        ALB.replace('"GET http://www.example.com:80/ HTTP/1.1"', '"GET"'),
        ALB.replace(' "forward"', ' "forward'),
        ALB[:200],
        "",
        "http",
    ],
)
def test_parse_aws_alb_log_refuses_other_lines(text: str) -> None:
    assert vrl_parsers.parse_aws_alb_log(text) is None


PROVIDER_CASES = [
    ("parse_query_string", "a=1&a=2", {"a": ["1", "2"]}),
    ("parse_url", "http://h/p?q=1", None),
    ("parse_tokens", "a [b c] -", ["a", "b c", None]),
    ("parse_int", "0x10", 16),
    ("parse_klog", "W0101 00:00:00.000000 7 x.go:3] m", None),
    ("parse_glog", "F20250101 00:00:00.000000 7 x.go:3] m", None),
    ("parse_linux_authorization", AUTH_LINE, None),
    ("parse_aws_vpc_flow_log", "2 1 eni-1 - - - - - - - 1 2 - NODATA", None),
    ("parse_aws_cloudwatch_log_subscription_message", orjson.dumps(CLOUDWATCH).decode(), None),
    ("parse_aws_alb_log", ALB, ALB_READ),
]


@pytest.mark.parametrize(("name", "text", "expected"), PROVIDER_CASES)
async def test_the_provider_body_parses_and_a_bad_line_passes_unchanged(
    name: str, text: str, expected: Any
) -> None:
    config = {"field": ".something", "parser": name, "target_field": ""}
    bad = "not of the format at all: http://"
    out = await run("parse", config, [{"something": text}, {"something": bad}])
    parsed = out.main[0]["something"]
    assert parsed != text
    if expected is not None:
        assert parsed == expected
    if name not in ("parse_query_string", "parse_tokens"):  # every text is one of those
        assert out.main[1] == {"something": bad}


# The error formats of parse_apache_log and parse_nginx_log: VRL's own cases
# (src/stdlib/parse_apache_log.rs and parse_nginx_log.rs), as its answers.
NGINX_ERROR = (
    '2021/04/01 13:02:31 [error] 31#31: *1 open() "/usr/share/nginx/html/not-found" failed '
    '(2: No such file or directory), client: 172.17.0.1, server: localhost, request: "POST '
    '/not-found HTTP/1.1", host: "localhost:8081"'
)
NGINX_ERROR_READ = {
    "cid": 1,
    "client": "172.17.0.1",
    "host": "localhost:8081",
    "message": 'open() "/usr/share/nginx/html/not-found" failed (2: No such file or directory)',
    "pid": 31,
    "request": "POST /not-found HTTP/1.1",
    "server": "localhost",
    "severity": "error",
    "tid": 31,
    "timestamp": "2021-04-01T13:02:31Z",
}
APACHE_ERROR = (
    "[01/Mar/2021:12:00:19 +0000] [ab:alert] [pid 4803:tid 3814] [client "
    "147.159.108.175:24259] I'll bypass the haptic COM bandwidth"
)
APACHE_ERROR_READ = {
    "timestamp": "2021-03-01T12:00:19Z",
    "message": "I'll bypass the haptic COM bandwidth",
    "module": "ab",
    "severity": "alert",
    "pid": 4803,
    "thread": "3814",
    "client": "147.159.108.175",
    "port": 24259,
}


@pytest.mark.parametrize(
    ("parser", "text", "time_format", "expected"),
    [
        ("nginx", NGINX_ERROR, None, NGINX_ERROR_READ),
        (
            "nginx",
            '2021/04/01 13:02:31 [warn] 7#9: *3 limiting requests, excess: 0.640 by zone "a", '
            'client: 10.0.0.1, server: , referrer: "http://x/"',
            None,
            {
                "cid": 3,
                "client": "10.0.0.1",
                "excess": 0.64,
                "message": "limiting requests",
                "pid": 7,
                "referer": "http://x/",
                "server": "",
                "severity": "warn",
                "tid": 9,
                "timestamp": "2021-04-01T13:02:31Z",
                "zone": "a",
            },
        ),
        ("apache", APACHE_ERROR, None, APACHE_ERROR_READ),
        (
            "apache",
            APACHE_ERROR.replace("147.159.108.175", "eda7:35d:3ceb:ef1e:2133:e7bf:116e:24cc"),
            None,
            {**APACHE_ERROR_READ, "client": "eda7:35d:3ceb:ef1e:2133:e7bf:116e:24cc"},
        ),
        (
            "apache",
            "[01/Mar/2021:12:00:19 +0000] [proxy:error] [pid 23964] (113)No route to host: "
            "AH00957: HTTP: attempt to connect to 10.1.0.244:9000 (hostname.domain.com) failed",
            None,
            {
                "timestamp": "2021-03-01T12:00:19Z",
                "module": "proxy",
                "severity": "error",
                "pid": 23964,
                "message1": "(113)No route to host: AH00957: ",
                "message2": "HTTP: attempt to connect to 10.1.0.244:9000 (hostname.domain.com) "
                "failed",
            },
        ),
        (
            "apache",
            "[2021/06/03 09:30:50] - - - -",
            "%Y/%m/%d %H:%M:%S",
            {"timestamp": "2021-06-03T09:30:50Z"},
        ),
        (
            "apache",
            "[Wed Oct 11 14:32:52.123456 2000] [core:error] [pid 35708:tid 4328636416] "
            "[client 72.15.99.187:80] File does not exist",
            "%a %b %d %H:%M:%S%.f %Y",
            {
                "timestamp": "2000-10-11T14:32:52.123456Z",
                "module": "core",
                "severity": "error",
                "pid": 35708,
                "thread": "4328636416",
                "client": "72.15.99.187",
                "port": 80,
                "message": "File does not exist",
            },
        ),
    ],
)
async def test_error_logs_as_vrl_reads_them(
    parser: str, text: str, time_format: str | None, expected: dict[str, Any]
) -> None:
    """The provider's body (``format: error``, its time format when set, ``Custom``
    naming the custom one) parses the line as VRL does."""
    options: dict[str, Any] = {"format": "error"}
    if time_format is not None:
        options |= {"timestamp_format": "Custom", "custom_timestamp_format": time_format}
    config = {"field": ".message", "parser": f"parse_{parser}_log", "options": options}
    out = await run("parse", config, [{"message": text}])
    assert out.main == [{"message": expected}]
    # tidegate's own shape: the same parser, its time format as custom_format
    ours = {"parser": parser, "options": {"format": "error"}}
    if time_format is not None:
        ours["options"]["custom_format"] = time_format
    assert (await run("parse", ours, [{"message": text}])).main == out.main


async def test_an_error_line_not_of_the_format_or_its_time_passes_unchanged() -> None:
    """As VRL's error: a line of another form, a time not in the format (apache's
    default is the access log's), an integer past 64 bits: the event passes unchanged."""
    lines = [
        "not an error log line",
        "[Wed Oct 11 14:32:52 2000] [core:error] [pid 1] [client 1.2.3.4:80] default format",
        NGINX_ERROR.replace("31#31", "99999999999999999999#31"),
    ]
    for parser in ("apache", "nginx"):
        config = {"field": ".message", "parser": f"parse_{parser}_log",
                  "options": {"format": "error"}}  # fmt: skip
        out = await run("parse", config, [{"message": line} for line in lines])
        assert out.main == [{"message": line} for line in lines]
    # A time format that is not one: a 400 at the option.
    with pytest.raises(ValidationFailed, match="not a timestamp format"):
        build("parse", {"parser": "nginx", "options": {"format": "error", "custom_format": "%Q"}})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '172.17.0.1 - alice [01/Apr/2021:12:02:31 +0000] "POST /not-found HTTP/1.1" 404 153 '
            '"http://localhost/somewhere" "Mozilla/5.0" "2.75"',
            {
                "client": "172.17.0.1",
                "user": "alice",
                "timestamp": "2021-04-01T12:02:31Z",
                "request": "POST /not-found HTTP/1.1",
                "status": 404,
                "size": 153,
                "referer": "http://localhost/somewhere",
                "agent": "Mozilla/5.0",
                "compression": "2.75",
            },
        ),
        (
            '0.0.0.0 - - [04/Oct/2022:04:34:49 +0000] "" 400 0 "" ""',
            {
                "client": "0.0.0.0",
                "timestamp": "2022-10-04T04:34:49Z",
                "request": "",
                "status": 400,
                "size": 0,
                "referer": "",
                "agent": "",
            },
        ),
        (
            '172.17.0.1 - - [31/Mar/2021:12:04:07 +0000] "GET / HTTP/1.1" 200 612 "-" '
            '"curl/7.75.0" "-"',
            {
                "client": "172.17.0.1",
                "timestamp": "2021-03-31T12:04:07Z",
                "request": "GET / HTTP/1.1",
                "status": 200,
                "size": 612,
                "referer": "-",
                "agent": "curl/7.75.0",
            },
        ),
    ],
)
async def test_parse_nginx_log_combined_as_vrl_names_its_fields(
    text: str, expected: dict[str, Any]
) -> None:
    """VRL's own cases (``parse_nginx_log.rs``): the provider's ``parse_nginx_log``
    answers VRL's fields; a line not of the format (no ``-`` ident) passes unchanged."""
    config = {"field": ".message", "parser": "parse_nginx_log", "options": {"format": "combined"}}
    other = text.replace(" - ", " x ", 1)
    out = await run("parse", config, [{"message": text}, {"message": other}])
    assert out.main == [{"message": expected}, {"message": other}]
