"""The parsing corpus: lines of every form the store parses, and lines it must not
parse, with what each must yield. Shared by the parser's unit tests and the tests that
send the corpus through ingestion and read it back (export, aggregate)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    name: str
    line: str
    # The fields the line must yield (a subset of what is stored in its meta); None: the
    # line must not be parsed into fields.
    fields: dict[str, Any] | None
    # The level stored for the line (the sender gives none in the corpus).
    level: str | None = None
    # Queries that must find the line.
    finds: tuple[str, ...] = field(default=())


CORPUS: tuple[Case, ...] = (
    Case(
        "json",
        '{"level":"error","message":"payment failed","status":503,"user":{"id":42}}',
        {"message": "payment failed", "_status": 503, "user": {"id": 42}, "level": "error"},
        level="error",
        finds=("status:503", "status:>=500", "user.id:42", "level:error", "_status:503"),
    ),
    Case(
        "json with a reserved _source and a numeric pino level",
        '{"level":50,"msg":"db down","_source":"k8s","_type":"event"}',
        {"msg": "db down", "__source": "k8s", "__type": "event", "level": 50},
        level="ERROR",
        finds=("_source:k8s", "_type:event", "level:error", "msg:db"),
    ),
    Case(
        "json at the end of a text",
        '2025-11-22T08:00:01Z GET /orders done {"status":200,"took_ms":12}',
        {"_status": 200, "took_ms": 12},
        finds=("status:200", "took_ms:<20"),
    ),
    Case(
        "json at the end of a text with a level word before it",
        '2025-11-22 08:00:01 WARN slow {"took_ms":900}',
        {"took_ms": 900},
        level="WARN",
        finds=("took_ms:>500", "level:warn"),
    ),
    Case(
        "logfmt",
        'time=2025-11-22T08:00:01Z level=warn msg="slow query" duration=1.5s status=503',
        {"level": "warn", "msg": "slow query", "message": "slow query", "_status": "503"},
        level="warn",
        finds=("status:503", "status:>=500", "duration:1.5s", "level:warn", "message:slow"),
    ),
    Case(
        "apache common",
        '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326',
        {
            "clientip": "127.0.0.1",
            "auth": "frank",
            "verb": "GET",
            "request": "/apache_pb.gif",
            "response": 200,
            "bytes": 2326,
        },
        finds=("response:200", "bytes:>2000", "verb:GET", "clientip:127.0.0.1"),
    ),
    Case(
        "apache combined (nginx's default access log)",
        '10.1.2.3 - - [22/Nov/2025:08:00:01 +0000] "POST /api/login HTTP/1.1" 503 17 '
        '"https://example.com/" "Mozilla/5.0 (X11; Linux x86_64)"',
        {
            "clientip": "10.1.2.3",
            "verb": "POST",
            "request": "/api/login",
            "response": 503,
            "bytes": 17,
            "referrer": "https://example.com/",
            "agent": "Mozilla/5.0 (X11; Linux x86_64)",
        },
        finds=("response:>=500", "agent:mozilla", 'request:"/api/login"'),
    ),
    Case(
        "apache common from an IPv6 client, with a host name as the user",
        'fe80::1 - ann.example [22/Nov/2025:08:00:01 +0000] "DELETE /x/1 HTTP/2.0" 204 -',
        {"clientip": "fe80::1", "auth": "ann.example", "verb": "DELETE", "response": 204},
        finds=("response:204", "-bytes:*"),
    ),
    Case(
        "nginx error",
        "2025/11/22 08:00:01 [error] 1234#5678: *9 upstream timed out (110: Connection "
        'timed out), client: 10.0.0.1, server: api, request: "GET /x HTTP/1.1", '
        'upstream: "http://10.0.0.2:80/x", host: "api.example.com"',
        {
            "pid": 1234,
            "tid": 5678,
            "connection": 9,
            "client": "10.0.0.1",
            "server": "api",
            "request": "GET /x HTTP/1.1",
            "message": "upstream timed out (110: Connection timed out)",
        },
        level="ERROR",
        finds=("level:error", "server:api", "pid:1234", "meta.host:api.example.com"),
    ),
    Case(
        "klog (Kubernetes components)",
        'E1122 08:00:01.123456       1 reflector.go:138] Failed to watch *v1.Pod: "forbidden"',
        {
            "threadid": 1,
            "caller": "reflector.go:138",
            "message": 'Failed to watch *v1.Pod: "forbidden"',
        },
        level="ERROR",
        finds=("level:error", "caller:reflector.go", "threadid:1"),
    ),
    Case(
        "syslog rfc 3164",
        "<34>Oct 11 22:14:15 mymachine su[123]: 'su root' failed for lonvick on /dev/pts/8",
        {
            "priority": 34,
            "facility": "auth",
            "severity": "critical",
            "hostname": "mymachine",
            "appname": "su",
            "procid": "123",
            "message": "'su root' failed for lonvick on /dev/pts/8",
        },
        level="CRITICAL",
        finds=("appname:su", "facility:auth", "level:critical", "hostname:mymachine"),
    ),
    Case(
        "syslog rfc 3164 as a file holds it (no priority)",
        "Nov 22 08:00:01 web-1 sshd[99]: Accepted publickey for deploy",
        {
            "hostname": "web-1",
            "appname": "sshd",
            "procid": "99",
            "message": "Accepted publickey for deploy",
        },
        finds=("appname:sshd", "procid:99"),
    ),
    Case(
        "syslog rfc 5424",
        "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 "
        '[exampleSDID@32473 iut="3" eventSource="Application"] An application event',
        {
            "priority": 165,
            "facility": "local4",
            "severity": "notice",
            "version": 1,
            "hostname": "mymachine.example.com",
            "appname": "evntslog",
            "msgid": "ID47",
            "structured_data": {"exampleSDID@32473": {"iut": "3", "eventSource": "Application"}},
            "message": "An application event",
        },
        level="NOTICE",
        finds=("msgid:ID47", "appname:evntslog", "level:notice"),
    ),
    Case(
        "postgresql (Debian's log_line_prefix)",
        '2025-11-22 08:00:01.123 UTC [4711] app@shop ERROR:  duplicate key value violates unique constraint "users_pkey"',
        {
            "timestamp": "2025-11-22 08:00:01.123 UTC",
            "pid": 4711,
            "severity": "ERROR",
            "user": "app",
            "database": "shop",
            "message": 'duplicate key value violates unique constraint "users_pkey"',
        },
        level="ERROR",
        finds=("level:error", "database:shop", "user:app", "pid:4711", "severity:error"),
    ),
    Case(
        "postgresql LOG (the default prefix)",
        "2025-11-22 08:00:02.5 UTC [81] LOG:  checkpoint starting: time",
        {"pid": 81, "severity": "LOG", "message": "checkpoint starting: time"},
        level="INFO",
        finds=("level:info", "severity:log"),
    ),
    Case(
        "redis",
        "1:M 22 Nov 2025 08:00:01.123 # WARNING overcommit_memory is set to 0!",
        {
            "timestamp": "22 Nov 2025 08:00:01.123",
            "pid": 1,
            "role": "primary",
            "message": "WARNING overcommit_memory is set to 0!",
        },
        level="WARNING",
        finds=("role:primary", "level:warning"),
    ),
    Case(
        "tomcat (catalina)",
        "22-Nov-2025 08:00:01.123 SEVERE [main] org.apache.catalina.core.StandardContext.startInternal One or more listeners failed to start.",
        {
            "timestamp": "22-Nov-2025 08:00:01.123",
            "thread": "main",
            "logger": "org.apache.catalina.core.StandardContext.startInternal",
            "message": "One or more listeners failed to start.",
        },
        level="SEVERE",
        finds=("level:severe", "thread:main", "logger:org.apache.catalina"),
    ),
    Case(
        "ruby logger (rails)",
        'I, [2025-11-22T08:00:01.123456 #4711]  INFO -- : Started GET "/cart" for 10.0.0.1',
        {
            "timestamp": "2025-11-22T08:00:01.123456",
            "pid": 4711,
            "message": 'Started GET "/cart" for 10.0.0.1',
        },
        level="INFO",
        finds=("level:info", "pid:4711", "message:started"),
    ),
    Case(
        "go log with the file",
        "2025/11/22 08:00:01 server.go:87: ERROR could not bind :8080",
        {
            "timestamp": "2025/11/22 08:00:01",
            "caller": "server.go:87",
            "message": "ERROR could not bind :8080",
        },
        level="ERROR",
        finds=("level:error", "caller:server.go"),
    ),
    Case(
        "go log",
        "2025/11/22 08:00:01.123456 listening on :8080",
        {"timestamp": "2025/11/22 08:00:01.123456", "message": "listening on :8080"},
        finds=("message:listening",),
    ),
    Case(
        "aws application load balancer",
        'http 2025-11-22T08:00:01.186641Z app/web/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 503 503 34 366 "GET http://shop.example.com:80/cart HTTP/1.1" "curl/8.5.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/web/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "-" "-" 0 2025-11-22T08:00:01.164000Z "forward" "-" "-" "10.0.0.1:80" "503" "-" "-"',
        {
            "type": "http",
            "elb": "app/web/50dc6c495c0c9188",
            "client": "192.168.131.39:2817",
            "target_processing_time": 0.001,
            "elb_status_code": 503,
            "sent_bytes": 366,
            "verb": "GET",
            "url": "http://shop.example.com:80/cart",
            "user_agent": "curl/8.5.0",
        },
        finds=("elb_status_code:>=500", "verb:GET", "elb:app/web"),
    ),
    Case(
        "aws classic load balancer",
        '2025-11-22T08:00:01.945958Z web-lb 192.168.131.39:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 "GET http://shop.example.com:80/ HTTP/1.1" "curl/7.38.0" - -',
        {"elb": "web-lb", "elb_status_code": 200, "received_bytes": 0, "httpversion": "1.1"},
        finds=("elb:web-lb", "elb_status_code:200"),
    ),
    Case(
        "amazon s3 server access log",
        '79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be shop-assets [22/Nov/2025:08:00:01 +0000] 192.0.2.3 79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be 3E57427F3EXAMPLE REST.GET.OBJECT img/logo.png "GET /shop-assets/img/logo.png HTTP/1.1" 404 NoSuchKey 243 - 7 - "-" "aws-cli/2.15" - s9lzHYrFp76ZVxRcpX9+5cjAnEH2ROuNkd2BHfIa6Uk= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader shop-assets.s3.us-west-1.amazonaws.com TLSv1.2 - -',
        {
            "bucket": "shop-assets",
            "operation": "REST.GET.OBJECT",
            "key": "img/logo.png",
            "http_status": 404,
            "error_code": "NoSuchKey",
            "bytes_sent": 243,
        },
        finds=("http_status:404", "error_code:NoSuchKey", "bucket:shop-assets"),
    ),
    Case(
        "haproxy http log",
        'haproxy[14389]: 10.0.1.2:33317 [22/Nov/2025:08:00:01.655] http-in static/srv1 10/0/30/69/109 502 2750 - - SH-- 1/1/1/1/0 0/0 "GET /index.html HTTP/1.1"',
        {
            "pid": 14389,
            "client_ip": "10.0.1.2",
            "frontend": "http-in",
            "backend": "static",
            "server": "srv1",
            "time_total": 109,
            "status_code": 502,
            "url": "/index.html",
        },
        finds=("status_code:502", "backend:static", "time_total:>100"),
    ),
    Case(
        "haproxy http log inside rfc 3164 syslog, as haproxy sends it (no host name)",
        '<134>Nov 22 08:00:01 haproxy[1234]: 10.0.1.2:33317 [22/Nov/2025:08:00:01.655] http-in api/srv2 10/0/30/69/409 504 120 - - sH-- 1/1/1/1/0 0/0 "POST /pay HTTP/1.1"',
        {
            "facility": "local0",
            "appname": "haproxy",
            "procid": "1234",
            "client_ip": "10.0.1.2",
            "backend": "api",
            "server": "srv2",
            "time_total": 409,
            "status_code": 504,
            "verb": "POST",
            "url": "/pay",
        },
        level="INFO",
        finds=("status_code:504", "appname:haproxy", "backend:api", "time_total:>400"),
    ),
    Case(
        "haproxy http log in a syslog file, as rsyslog writes it",
        'Nov 22 08:00:01 lb-1 haproxy[1234]: 10.0.1.3:40000 [22/Nov/2025:08:00:01.700] http-in web/srv1 0/0/1/2/3 200 512 - - ---- 1/1/0/0/0 0/0 "GET /health HTTP/1.1"',
        {"hostname": "lb-1", "appname": "haproxy", "status_code": 200, "url": "/health"},
        finds=("hostname:lb-1 status_code:200", "url:/health"),
    ),
    Case(
        "haproxy http log inside rfc 5424 syslog",
        '<134>1 2025-11-22T08:00:01.123Z lb-2 haproxy 1234 - - 10.0.1.4:40001 [22/Nov/2025:08:00:01.123] http-in web/srv3 0/0/1/2/3 404 90 - - ---- 1/1/0/0/0 0/0 "GET /missing HTTP/1.1"',
        {"hostname": "lb-2", "server": "srv3", "status_code": 404, "verb": "GET"},
        level="INFO",
        finds=("status_code:404 server:srv3",),
    ),
    Case(
        "aws lambda start line in cloudwatch",
        "START RequestId: 8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f Version: $LATEST",
        {
            "type": "START",
            "request_id": "8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f",
            "version": "$LATEST",
        },
        finds=("type:START", "request_id:8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f"),
    ),
    Case(
        "aws lambda report line in cloudwatch",
        "REPORT RequestId: 8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\tDuration: 1502.25 ms\tBilled Duration: 1503 ms\tMemory Size: 128 MB\tMax Memory Used: 71 MB\tInit Duration: 153.16 ms",
        {
            "type": "REPORT",
            "duration_ms": 1502.25,
            "billed_duration_ms": 1503,
            "memory_size_mb": 128,
            "max_memory_used_mb": 71,
            "init_duration_ms": 153.16,
        },
        finds=("duration_ms:>1000", "max_memory_used_mb:71", "type:REPORT"),
    ),
    Case(
        "aws lambda node.js runtime line in cloudwatch",
        "2025-11-22T08:00:01.123Z\t8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\tERROR\tInvoke Error: card declined",
        {
            "timestamp": "2025-11-22T08:00:01.123Z",
            "request_id": "8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f",
            "message": "Invoke Error: card declined",
        },
        level="ERROR",
        finds=("level:error message:invoke", "request_id:8f507cfc"),
    ),
    Case(
        "aws lambda python runtime line in cloudwatch",
        "[WARNING]\t2025-11-22T08:00:02.456Z\t8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\tretrying the call",
        {"request_id": "8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f", "message": "retrying the call"},
        level="WARNING",
        finds=("level:warning message:retrying",),
    ),
    Case(
        "a lambda line as cloudwatch exports it to s3 (its time in front)",
        "2025-11-22T08:00:03.000Z END RequestId: 8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f",
        {
            "type": "END",
            "request_id": "8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f",
            "timestamp": "2025-11-22T08:00:03.000Z",
        },
        finds=("type:END",),
    ),
    Case(
        "plain text with a level after a timestamp",
        "2025-11-22 08:00:01,123 ERROR [main] something broke",
        None,
        level="ERROR",
        finds=("level:error",),
    ),
    Case("plain text with a bracketed level", "[warn] disk almost full", None, level="WARN"),
    Case("plain text with a level in capitals", "FATAL: out of memory", None, level="FATAL"),
    # Lines that must not be parsed.
    Case("a sentence starting with a level word", "error rate is back to normal", None),
    Case("a capitalised sentence", "Info about the release follows", None),
    Case("a trailing character after the object", 'saved {"status":200}.', None),
    Case("text after the object", '{"status": 200} and more', None),
    Case("braces that are not JSON", "template {name} rendered {ok}", None),
    Case("a JSON array", "[1, 2, 3]", None),
    Case("one key=value in a sentence", "retrying with timeout=30 after failure", None),
    Case("broken JSON", '{"status": 200', None),
    Case("an address and a bracket, nothing more", "10.0.0.1:80 [oops] and then text", None),
    Case(
        "a ruby logger line whose letter and level disagree",
        "E, [2025-11-22T08:00:01 #1]  INFO -- : x",
        None,
    ),
    Case("a syslog-like time and a word with no host or pid", "Nov 22 08:00:01 kernel: x", None),
    Case(
        "an iso time in front of text that is no lambda line",
        "2025-11-22T08:00:03.000Z START of the nightly job",
        None,
    ),
    Case(
        "a lambda runtime line with a level the runtime never writes",
        "2025-11-22T08:00:01.123Z\t8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\tLOUD\tx",
        None,
    ),
    Case(
        "a postgresql-like line of no known severity",
        "2025-11-22 08:00:01 UTC [1] SOMETHING:  x",
        None,
    ),
)
