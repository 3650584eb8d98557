"""Each processor's runtime over events as dicts: what it emits, where, and that a bad
event never fails its batch."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography.hazmat.decrepit.ciphers.modes import CFB
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from tests.components.helpers import build, run

from tidegate.components.base import BuildContext, RunContext
from tidegate.components.catalogue import REGISTRY
from tidegate.components.processors.crypto_fields import ALGORITHMS
from tidegate.components.validation import validate_user_config
from tidegate.errors import ValidationFailed

APP_A = {"field": ".app", "str_operator": "equal", "value": "a"}


def leaf(field: str, op: str, value: Any = "") -> dict[str, Any]:
    return {"field": field, "str_operator": op, "value": value}


async def test_filter_action_and_conditional() -> None:
    events = [{"app": "a"}, {"app": "b"}, {}]
    allow = await run("filter", {"action": "allow", "conditional": APP_A}, events)
    assert (allow.main, allow.discarded) == ([events[0]], events[1:])
    drop = await run("filter", {"action": "drop", "conditional": APP_A}, events)
    assert drop.main == events[1:]


async def test_route_sends_to_every_match_and_unmatched() -> None:
    config = {
        "conditionals": [
            {"label": "A", "output_name": "a", "expressions": [APP_A]},
            {
                "label": "big",
                "output_name": "big",
                "logical_operation": "OR",
                "expressions": [leaf(".n", "greater", 10), leaf(".big", "exists")],
            },
            {"output_name": "nested", "conditional": {"expressions": [leaf(".x", "exists")]}},
        ]
    }
    events = [{"app": "a", "n": 11}, {"app": "b"}, {"n": 1, "big": True}, {"x": 1}]
    out = await run("route", config, events)
    assert out.main == []
    assert out.named == {
        "a": [events[0]],
        "big": [events[0], events[2]],
        "nested": [events[3]],
        "_unmatched": [events[1]],
    }


def test_route_config_errors_point_at_the_conditional() -> None:
    with pytest.raises(ValidationFailed) as caught:
        build("route", {"conditionals": [{"output_name": "a", "expressions": [leaf(".a", "x")]}]})
    assert caught.value.errors[0].instance_path == (
        "/user_config/conditionals/0/expressions/0/str_operator"
    )
    with pytest.raises(ValidationFailed):
        build(
            "route",
            {
                "conditionals": [
                    {"output_name": "a", "expressions": [APP_A]},
                    {"output_name": "a", "expressions": [APP_A]},
                ]
            },
        )
    with pytest.raises(ValidationFailed):
        build("route", {"conditionals": [{"output_name": "_unmatched", "expressions": [APP_A]}]})


async def test_sample_keeps_one_in_rate_across_batches_and_always_include() -> None:
    runtime = build("sample", {"rate": 3, "always_include": leaf(".level", "equal", "error")})
    first = await run("sample", {}, [{"n": n} for n in range(4)], runtime)
    second = await run("sample", {}, [{"n": 4}, {"n": 5}, {"n": 6, "level": "ERROR"}], runtime)
    assert first.main == [{"n": 0}, {"n": 3}]
    assert second.main == [{"n": 6, "level": "ERROR"}]
    assert len(first.discarded) + len(second.discarded) == 4


async def test_drop_fields_and_map_fields() -> None:
    events = [{"a": 1, "b": {"c": 2, "d": 3}, "e": 4}, {"z": 1}]
    dropped = await run("drop-fields", {"fields": [".a", ".b.c", ".missing"]}, events)
    assert dropped.main == [{"b": {"d": 3}, "e": 4}, {"z": 1}]
    mapped = await run(
        "map-fields",
        {
            "mappings": [
                {"source_field": ".a", "target_field": ".x.y", "drop_source": True},
                {"source_field": ".e", "target_field": ".b", "overwrite": False},
                {"source_field": ".e", "target_field": ".b.d", "overwrite": True},
            ]
        },
        events,
    )
    assert mapped.main == [{"b": {"c": 2, "d": 4}, "e": 4, "x": {"y": 1}}, {"z": 1}]


async def test_dedupe_match_ignore_and_bounded_cache() -> None:
    events = [{"id": 1, "t": 1}, {"id": 1, "t": 2}, {"id": 2, "t": 1}, {"t": 3}, {"t": 4}]
    match = await run("dedupe", {"fields": [".id"], "comparison_type": "match"}, events)
    # A missing field is a value of its own: the two events without id are duplicates.
    assert match.main == [events[0], events[2], events[3]]
    ignore = await run("dedupe", {"fields": [".t"], "comparison_type": "ignore"}, events)
    assert ignore.main == [events[0], events[2], events[3]]
    small = build("dedupe", {"fields": [".id"], "number_of_events": 2})
    out = await run("dedupe", {}, [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 1}], small)
    assert len(out.main) == 4  # id 1 left the cache of two


async def test_flatten_compact_stringify() -> None:
    event = {"a": {"b": {"c": 1}, "d": []}, "e": None, "f": {"g": None}, "h": [None, 1]}
    flat = await run("flatten-fields", {"delimiter": "_"}, [event])
    assert flat.main == [{"a_b_c": 1, "a_d": [], "e": None, "f_g": None, "h": [None, 1]}]
    only_a = await run("flatten-fields", {"fields": [".a"]}, [event])
    assert only_a.main[0]["a"] == {"b.c": 1, "d": []}
    compacted = await run("compact-fields", {}, [event])
    assert compacted.main == [{"a": {"b": {"c": 1}}, "h": [1]}]
    keep_empty = await run(
        "compact-fields", {"compact_array": False, "compact_object": False}, [event]
    )
    assert keep_empty.main == [{"a": {"b": {"c": 1}, "d": []}, "f": {}, "h": [1]}]
    text = await run("stringify", {}, [{"a": 1}])
    assert text.main == [{"message": '{"a":1}'}]


async def test_unroll() -> None:
    event = {"host": "h", "items": [{"k": 1}, 2]}
    values = await run("unroll", {"field": ".items"}, [event, {"items": "x"}])
    assert values.main == [
        {"host": "h", "items": {"k": 1}},
        {"host": "h", "items": 2},
        {"items": "x"},
    ]
    merged = await run("unroll", {"field": ".items", "values_only": False}, [event])
    assert merged.main == [{"host": "h", "k": 1}, {"host": "h", "items": 2}]
    huge = {"items": list(range(5_000))}
    assert (await run("unroll", {"field": ".items"}, [huge])).main == [huge]


async def test_set_timestamp() -> None:
    config = {
        "parsers": [
            {"field": ".when", "format": "%d/%b/%Y:%H:%M:%S %z"},
            {"field": ".time"},
        ]
    }
    events = [
        {"when": "10/Oct/2000:13:55:36 -0700"},
        {"time": "2024-01-01T00:00:00"},
        {"time": 1_700_000_000_000},
        {"time": "yesterday"},
    ]
    out = await run("set-timestamp", config, events)
    assert [event.get("timestamp") for event in out.main] == [
        971_211_336_000,
        1_704_067_200_000,
        1_700_000_000_000,
        None,
    ]


# Formats the platform reads with chrono's specifiers, as the parse processor's timestamp
# parser does; Python's strptime read each differently (None: not at all).
@pytest.mark.parametrize(
    ("fmt", "text", "expected"),
    [
        ("%F %T", "2024-01-02 03:04:05", 1_704_164_645_000),  # strptime: no %F, %T
        ("%s", "1700000000", 1_700_000_000_000),  # strptime: no %s
        ("%Y-%m-%d %H:%M:%S%.3f", "2024-01-02 03:04:05.678", 1_704_164_645_678),  # no %.3f
        # chrono's %f is nanoseconds (strptime: microseconds, at most 6 digits).
        ("%Y-%m-%dT%H:%M:%S.%f", "2024-01-02T03:04:05.250000000", 1_704_164_645_250),
        ("%Y-%m-%dT%H:%M:%S.%f", "2024-01-02T03:04:05.5", 1_704_164_645_000),  # 5 ns
        # A space matches any run of whitespace, or none (strptime: at least one).
        ("%Y-%m-%d %H:%M", "2024-01-0203:04", 1_704_164_640_000),
    ],
)
async def test_set_timestamp_reads_the_platforms_formats(
    fmt: str, text: str, expected: int
) -> None:
    out = await run("set-timestamp", {"parsers": [{"field": ".t", "format": fmt}]}, [{"t": text}])
    assert out.main == [{"t": text, "timestamp": expected}]


def test_set_timestamp_refuses_a_format_without_a_date_on_save() -> None:
    """Like the parse processor's timestamp parser: strptime read "%H:%M:%S" as a time
    in 1900, which is never set."""
    for parser in (
        {"field": ".t", "format": "%H:%M:%S"},
        {"field": ".t", "options": {"format": "Custom", "custom_format": "%Q"}},
    ):
        with pytest.raises(ValidationFailed, match="not a timestamp format"):
            validate_user_config(
                kind="processor", type_="set-timestamp", user_config={"parsers": [parser]}
            )
    provider = {"field": ".t", "options": {"format": "Custom", "custom_format": "%FT%T%:z"}}
    validate_user_config(
        kind="processor", type_="set-timestamp", user_config={"parsers": [provider]}
    )


APACHE = (
    '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 '
    '"http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"'
)


@pytest.mark.parametrize(
    ("parser", "options", "text", "expected"),
    [
        ("json", {}, '{"a": [1, 2]}', {"a": [1, 2]}),
        ("key_value", {}, 'a=1 b="two words"  c', {"a": "1", "b": "two words", "c": True}),
        (
            "key_value",
            {"field_delimiter": ";", "key_value_delimiter": ":"},
            "a:1;b:2",
            {"a": "1", "b": "2"},
        ),
        (
            "regex",
            {"pattern": r"user=(?P<user>\w+) took (?P<ms>\d+)ms(?P<never>!)?"},
            "GET user=bob took 12ms",
            {"user": "bob", "ms": "12"},
        ),
        (
            "apache",
            {"format": "combined"},
            APACHE,
            {
                "host": "127.0.0.1",
                "user": "frank",
                "timestamp": "2000-10-10T20:55:36Z",
                "message": "GET /apache_pb.gif HTTP/1.0",
                "method": "GET",
                "path": "/apache_pb.gif",
                "protocol": "HTTP/1.0",
                "status": 200,
                "size": 2326,
                "referrer": "http://www.example.com/start.html",
                "agent": "Mozilla/4.08 [en] (Win98; I ;Nav)",
            },
        ),
        (
            "nginx",
            {"format": "common"},
            '10.0.0.1 - - [01/Jan/2024:00:00:00 +0000] "POST /x HTTP/1.1" 404 -',
            {
                "host": "10.0.0.1",
                "timestamp": "2024-01-01T00:00:00Z",
                "message": "POST /x HTTP/1.1",
                "method": "POST",
                "path": "/x",
                "protocol": "HTTP/1.1",
                "status": 404,
            },
        ),
        (
            "syslog",
            {},
            '<165>1 2003-10-11T22:14:15.003Z host.example app 12 ID47 [ex@1 a="1"] hello',
            {
                "facility": "local4",
                "severity": "notice",
                "version": 1,
                "timestamp": "2003-10-11T22:14:15.003Z",
                "hostname": "host.example",
                "appname": "app",
                "procid": "12",
                "msgid": "ID47",
                "ex@1": {"a": "1"},
                "message": "hello",
            },
        ),
        ("csv_row", {"headers": ["a", "b"]}, 'x,"y,z",w', {"a": "x", "b": "y,z"}),
        ("csv_row", {"delimiter": ";"}, "1;2", ["1", "2"]),
    ],
)
async def test_parse(parser: str, options: dict[str, Any], text: str, expected: Any) -> None:
    config = {"field": ".message", "target_field": ".parsed", "parser": parser, "options": options}
    out = await run("parse", config, [{"message": text}])
    assert out.main == [{"message": text, "parsed": expected}]


async def test_parse_rfc3164_and_unparsed_events_pass() -> None:
    out = await run(
        "parse", {"parser": "syslog"}, [{"message": "<34>Oct 11 22:14:15 box su[7]: no"}]
    )
    parsed = out.main[0]["message"]
    assert (parsed["hostname"], parsed["appname"], parsed["procid"], parsed["message"]) == (
        "box",
        "su",
        "7",
        "no",
    )
    assert parsed["timestamp"].endswith("-10-11T22:14:15Z")
    events = [{"message": "not json"}, {"message": 5}, {}]
    assert (await run("parse", {"parser": "json"}, events)).main == events


def test_parse_refuses_patterns_that_are_not_linear_or_have_no_group() -> None:
    for pattern, why in [(r"(?P<a>a)\1", "RE2"), ("(?=x)(?P<a>a)", "RE2"), ("abc", "named")]:
        with pytest.raises(ValidationFailed) as caught:
            build("parse", {"parser": "regex", "options": {"pattern": pattern}})
        assert caught.value.errors[0].instance_path == "/user_config/options/pattern"
        assert why in caught.value.errors[0].message
    with pytest.raises(ValidationFailed):
        build("parse", {"parser": "regex"})


async def test_parse_regex_is_linear_on_a_hostile_subject() -> None:
    # (a+)+$ backtracks exponentially in Python's re; RE2 answers at once.
    out = await run(
        "parse",
        {"parser": "regex", "options": {"pattern": r"(?P<x>(a+)+)$"}},
        [{"message": "a" * 5_000 + "!"}],
    )
    assert out.main == [{"message": "a" * 5_000 + "!"}]


async def test_parse_sequentially_first_match_and_unmatched() -> None:
    config = {
        "field": ".message",
        "target_field": ".p",
        "parsers": [
            {"parser": "json"},
            {"parser": "regex", "options": {"pattern": r"^(?P<word>\w+)$"}},
        ],
    }
    events = [{"message": '{"a":1}'}, {"message": "hello"}, {"message": "two words"}, {}]
    out = await run("parse-sequentially", config, events)
    assert out.main == [
        {"message": '{"a":1}', "p": {"a": 1}},
        {"message": "hello", "p": {"word": "hello"}},
    ]
    assert out.named == {
        "parser-1": out.main[:1],
        "parser-2": out.main[1:],
        "_unmatched": [events[2], events[3]],
    }


async def test_parse_sequentially_as_the_provider_writes_it() -> None:
    """processors/parse_sequentially.go: VRL parser names and a label per parser; the
    ``_output_name`` stored for each (the provider reads it back) names its output."""
    user_config = {
        "field": ".message",
        "parsers": [
            {"parser": "parse_json", "label": "json"},
            {"parser": "parse_key_value", "label": "kv", "_output_name": "kv-out"},
        ],
    }
    config = validate_user_config(
        kind="processor", type_="parse-sequentially", user_config=user_config
    )
    component = REGISTRY.get("processor", "parse-sequentially")
    assert component.outputs(config) == ["parser-1", "kv-out", "_unmatched"]
    assert component.stored is not None
    stored = component.stored(config, user_config)
    assert [p["_output_name"] for p in stored["parsers"]] == ["parser-1", "kv-out"]
    out = await run("parse-sequentially", user_config, [{"message": "a=1"}, {"message": "{}"}])
    assert out.named["kv-out"] == [{"message": {"a": "1"}}]
    assert out.named["parser-1"] == [{"message": {}}]


async def test_event_to_metric() -> None:
    config = {
        "metric_name": "bytes",
        "metric_type": "gauge",
        "metric_kind": "absolute",
        "value_field": ".size",
        "tags": [{"name": "app", "value": ".app"}, {"name": "env", "value": "prod"}],
    }
    events = [{"size": 10, "app": "web", "timestamp": 5}, {"size": "x"}, {"size": 2}]
    out = await run("event-to-metric", config, events)
    assert out.main == [
        {
            "name": "bytes",
            "kind": "absolute",
            "value": {"type": "gauge", "value": 10},
            "tags": {"app": "web", "env": "prod"},
            "timestamp": 5,
        },
        {"size": "x"},
        {
            "name": "bytes",
            "kind": "absolute",
            "value": {"type": "gauge", "value": 2},
            "tags": {"env": "prod"},
        },
    ]
    counted = await run("event-to-metric", {"metric_name": "hits"}, [{}])
    assert counted.main[0]["value"] == {"type": "counter", "value": 1}


async def test_encrypt_then_decrypt_fields() -> None:
    key = "k" * 32
    config = {"field": ".secret", "key": key, "iv_field": ".iv", "algorithm": "AES-256-GCM"}
    events = [{"secret": "card 4242", "n": 1}, {"secret": {"a": 1}}, {"n": 2}]
    sealed = await run("encrypt-fields", config, events)
    assert "4242" not in repr(sealed.main)
    assert sealed.main[2] == {"n": 2}
    assert sealed.main[0]["iv"] != sealed.main[1]["iv"]
    opened = await run("decrypt-fields", config, sealed.main)
    assert opened.main == [{"secret": "card 4242", "n": 1}, {"secret": '{"a":1}'}, {"n": 2}]
    wrong = await run("decrypt-fields", {**config, "key": "x" * 32}, sealed.main[:1])
    assert wrong.main == sealed.main[:1]  # does not decrypt: passes unchanged


@pytest.mark.parametrize("algorithm", ALGORITHMS)
async def test_encrypt_then_decrypt_in_every_mode_of_the_provider(algorithm: str) -> None:
    """The provider's ``encrypt_fields`` body (``encode_raw_bytes`` true) in each of its
    algorithms, and tidegate's GCM: what one encrypts the other opens."""
    key = "k" * (int(algorithm.split("-")[1]) // 8)
    config = {"field": ".secret", "algorithm": algorithm, "key": key, "iv_field": ".iv"}
    events = [{"secret": "card 4242" * 3}, {"secret": ""}]
    sealed = await run("encrypt-fields", {**config, "encode_raw_bytes": True}, events)
    assert "4242" not in repr(sealed.main)
    iv_size = 12 if algorithm.endswith("GCM") else 16
    assert [len(base64.b64decode(e["iv"])) for e in sealed.main] == [iv_size, iv_size]
    opened = await run("decrypt-fields", {**config, "decode_raw_bytes": True}, sealed.main)
    assert opened.main == events


async def test_platform_modes_are_the_standard_ones() -> None:
    """Read back with the ``cryptography`` primitives directly: CFB is plain AES-CFB,
    CBC-ISO7816 pads with 0x80 then zeros."""
    key = b"k" * 32
    config = {"field": ".s", "key": key.decode(), "iv_field": ".iv"}
    for algorithm in ("AES-256-CFB", "AES-256-CBC-ISO7816"):
        out = await run("encrypt-fields", {**config, "algorithm": algorithm}, [{"s": "hello"}])
        data, iv = (base64.b64decode(out.main[0][name]) for name in ("s", "iv"))
        mode = CFB(iv) if algorithm.endswith("CFB") else modes.CBC(iv)
        decryptor = Cipher(algorithms.AES(key), mode).decryptor()
        plain = decryptor.update(data) + decryptor.finalize()
        expected = b"hello" if algorithm.endswith("CFB") else b"hello\x80" + b"\x00" * 10
        assert plain == expected


def test_raw_bytes_and_a_short_key_are_refused() -> None:
    base = {"field": ".a", "iv_field": ".iv", "key": "k" * 32, "algorithm": "AES-256-CTR"}
    with pytest.raises(ValidationFailed, match="encode_raw_bytes"):
        build("encrypt-fields", {**base, "encode_raw_bytes": False})
    with pytest.raises(ValidationFailed, match="24 bytes"):
        build("decrypt-fields", {**base, "algorithm": "AES-192-CBC-PKCS7"})


def test_encryption_key_length_is_checked_and_never_echoed() -> None:
    with pytest.raises(ValidationFailed) as caught:
        build(
            "encrypt-fields",
            {"field": ".a", "iv_field": ".iv", "key": "hunter2", "algorithm": "AES-128-GCM"},
        )
    assert "16 bytes" in caught.value.message
    assert "hunter2" not in repr(caught.value.errors)


async def test_a_processor_that_raises_on_an_event_lets_it_pass() -> None:
    class Odd(dict[str, Any]):
        def get(self, *args: Any) -> Any:
            raise RuntimeError("odd event")

    odd = Odd(a=1)
    out = await run("drop-fields", {"fields": [".a"]}, [odd, {"a": 2, "b": 1}])
    assert out.main == [odd, {"b": 1}]


async def test_large_batches_run_through_offload() -> None:
    calls: list[int] = []

    async def offload(function: Any, *, work: int) -> Any:
        calls.append(work)
        return function()

    runtime = build("map-fields", {"mappings": [{"source_field": ".a", "target_field": ".b"}]})
    out = await runtime.run([{"a": 1}] * 3, context=RunContext(offload=offload))
    assert calls == [3]
    assert out.main == [{"a": 1, "b": 1}] * 3


def test_simulation_context_builds_fresh_state() -> None:
    assert build("dedupe", {}, BuildContext(simulation=True)) is not build("dedupe", {})


@pytest.mark.parametrize("flag", ["overwrite_target", "overwrite"])
async def test_map_fields_overwrites_a_target_only_when_told(flag: str) -> None:
    mapping = {"source_field": ".a", "target_field": ".b"}
    kept = build("map-fields", {"mappings": [mapping]})
    replaced = build("map-fields", {"mappings": [{**mapping, flag: True}]})
    context = RunContext()
    assert (await kept.run([{"a": 1, "b": 2}], context=context)).main == [{"a": 1, "b": 2}]
    assert (await replaced.run([{"a": 1, "b": 2}], context=context)).main == [{"a": 1, "b": 1}]


async def test_processors_in_the_terraform_providers_shape() -> None:
    """``Match``/``Ignore``, ``options{}`` wrappers and a set-timestamp parser's
    ``options{format: Custom, custom_format}``, as the provider writes them
    (``tests/pipelines/provider_bodies.py``), run as the flat forms do."""
    events = [{"id": 1, "t": 1}, {"id": 1, "t": 2}, {"id": 2, "t": 1}]
    match = await run("dedupe", {"fields": [".id"], "comparison_type": "Match"}, events)
    assert match.main == [events[0], events[2]]
    ignore = await run("dedupe", {"fields": [".t"], "comparison_type": "Ignore"}, events)
    assert ignore.main == [events[0], events[2]]
    event = {"a": {"b": {"c": 1}, "d": []}, "f": {"g": None}}
    flat = await run("flatten-fields", {"fields": [], "options": {"delimiter": "_"}}, [event])
    assert flat.main == [{"a_b_c": 1, "a_d": [], "f_g": None}]
    compact = {"fields": [], "options": {"compact_array": False, "compact_object": True}}
    assert (await run("compact-fields", compact, [event])).main == [{"a": {"b": {"c": 1}, "d": []}}]
    custom = {"format": "Custom", "custom_format": "%Y-%m-%d %H:%M:%S"}
    stamped = await run(
        "set-timestamp",
        {"parsers": [{"field": ".ts", "options": custom}]},
        [{"ts": "2024-01-01 00:00:01"}],
    )
    assert stamped.main[0]["timestamp"] == 1_704_067_201_000


def test_options_given_twice_or_unknown_formats_are_refused() -> None:
    with pytest.raises(ValidationFailed, match="delimiter"):
        build("flatten-fields", {"delimiter": ".", "options": {"delimiter": "_"}})
    with pytest.raises(ValidationFailed, match="custom_format"):
        build("set-timestamp", {"parsers": [{"field": ".ts", "options": {"format": "ISO"}}]})
    with pytest.raises(ValidationFailed, match="merge strategy"):
        build("reduce", {"merge_strategies": [{"field": ".a"}]})


async def test_reduce_with_the_providers_lists_and_strategies() -> None:
    config = {
        "duration_ms": 30_000,
        "max_events": 3,
        "group_by": [".id"],
        "date_formats": [{"field": "at", "format": "%d/%m/%Y"}],  # the same field as .at
        "merge_strategies": [
            {"field": ".method", "strategy": "array"},
            {"field": ".at", "strategy": "min"},
            {"field": ".raw", "strategy": "concat_raw"},
            {"field": ".short", "strategy": "shortest_array"},
            {"field": ".long", "strategy": "longest_array"},
        ],
    }
    events = [
        {"id": "a", "method": "GET", "at": "02/01/2024", "raw": "a", "short": [1, 2], "long": [1]},
        {"id": "a", "method": "PUT", "at": "01/02/2023", "raw": "b", "short": [1], "long": [1, 2]},
        {"id": "a", "method": "POST", "at": "31/12/2023", "raw": "c", "short": [], "long": []},
    ]
    out = await run("reduce", config, events)
    assert out.main == [
        {
            "id": "a",
            "method": ["GET", "PUT", "POST"],
            "at": "01/02/2023",
            "raw": "abc",
            "short": [],
            "long": [1, 2],
        }
    ]


async def test_parse_with_the_providers_parser_names() -> None:
    """``parse_nginx_log`` and ``parse_apache_log`` as the provider names them answer the
    fields VRL names (tidegate's own ``nginx`` and ``apache`` keep theirs);
    ``parse_regex`` (with its flags) and ``parse_csv`` (``field_names``) parse as
    tidegate's parsers do."""
    line = '10.0.0.1 - bob [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 12 "-" "curl/8"'
    nginx = {"format": "combined", "timestamp_format": "%d/%b/%Y:%T %z"}
    theirs = await run(
        "parse", {"parser": "parse_nginx_log", "options": nginx}, [{"message": line}]
    )
    assert theirs.main == [
        {
            "message": {
                "agent": "curl/8",
                "client": "10.0.0.1",
                "referer": "-",
                "request": "GET /a HTTP/1.1",
                "size": 12,
                "status": 200,
                "timestamp": "2000-10-10T20:55:36Z",
                "user": "bob",
            }
        }
    ]
    ours = await run("parse", {"parser": "nginx"}, [{"message": line}])
    assert ours.main[0]["message"]["host"] == "10.0.0.1"
    assert ours.main[0]["message"]["method"] == "GET"
    apache = {"format": "common"}
    common = line.replace(' "-" "curl/8"', "").replace(" - bob", " ann bob")
    theirs = await run(
        "parse", {"parser": "parse_apache_log", "options": apache}, [{"message": common}]
    )
    assert theirs.main[0]["message"]["identity"] == "ann"
    assert "ident" not in theirs.main[0]["message"]
    ours = await run("parse", {"parser": "apache", "options": apache}, [{"message": common}])
    assert ours.main[0]["message"]["ident"] == "ann"
    # VRL's parse_nginx_log has no common format: refused in the provider's shape.
    with pytest.raises(ValidationFailed, match="combined or error"):
        build("parse", {"parser": "parse_nginx_log", "options": {"format": "common"}})
    regex = {"pattern": "(?P<a>x.y)", "match_newline": True, "multiline": False}
    out = await run("parse", {"parser": "parse_regex", "options": regex}, [{"message": "x\ny"}])
    assert out.main == [{"message": {"a": "x\ny"}}]
    csv = {"parser": "parse_csv", "options": {"field_names": ["a", "b"]}}
    assert (await run("parse", csv, [{"message": "1,2"}])).main == [
        {"message": {"a": "1", "b": "2"}}
    ]
    with pytest.raises(ValidationFailed, match="parse_xml"):
        build("parse", {"parser": "parse_xml"})


async def test_event_to_metric_in_the_providers_shape() -> None:
    """processors/event_to_metric.go: value, namespace and tags as {value_type, value}."""
    config = {
        "metric_name": "requests",
        "metric_kind": "incremental",
        "metric_type": "sum",
        "value": {"value_type": "value", "value": 2.5},
        "namespace": {"value_type": "field", "value": ".team"},
        "tags": [
            {"name": "app", "value_type": "field", "value": ".app"},
            {"name": "path", "value_type": "value", "value": ".not-a-field"},
        ],
    }
    out = await run("event-to-metric", config, [{"app": "web", "team": "edge"}, {}])
    assert out.main == [
        {
            "name": "requests",
            "kind": "incremental",
            "value": {"type": "sum", "value": 2.5},
            "tags": {"app": "web", "path": ".not-a-field"},
            "namespace": "edge",
        },
        {
            "name": "requests",
            "kind": "incremental",
            "value": {"type": "sum", "value": 2.5},
            "tags": {"path": ".not-a-field"},
        },
    ]
    by_field = {**config, "value": {"value_type": "field", "value": ".n"}}
    by_field["namespace"] = {"value_type": "value", "value": "prod"}
    out = await run("event-to-metric", by_field, [{"n": 3}, {"n": "x"}])
    assert out.main[0]["value"] == {"type": "sum", "value": 3}
    assert out.main[0]["namespace"] == "prod"
    assert out.main[1] == {"n": "x"}
    with pytest.raises(ValidationFailed, match="namespace"):
        build("event-to-metric", {**config, "namespace": {"value_type": "none", "value": "x"}})
