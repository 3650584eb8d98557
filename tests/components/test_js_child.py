"""The js-script sandbox's request loop (``javascript/child.py``) driven in this
process, through its own framing: what the parent sends, what it answers. The other
js-script tests run it where it always runs, in a child process, which the suite's
coverage does not see; these check the same answers without the process around them."""

from __future__ import annotations

import io
import os
from dataclasses import asdict
from typing import Any

import orjson

from tidegate.components.processors.javascript import child
from tidegate.components.processors.javascript.sandbox import Limits, Script

TRANSFORM = """
function processEvent(message, metadata, timestamp, annotations) {
  if (message.drop) return null;
  if (message.fail) throw new Error("asked to fail");
  if (message.spin) { while (true) {} }
  message.seen = true;
  return message;
}
"""


def _request(op: str, script: Script, **extra: Any) -> bytes:
    limits = {
        name: value
        for name, value in asdict(Limits()).items()
        if not name.endswith("_s") and name != "processes"
    }
    body = {"op": op, "digest": script.digest, "source": script.source, "limits": limits}
    return child.frame(orjson.dumps({**body, **extra}))


def _served(*frames: bytes) -> list[bytes]:
    """The answers the loop writes for ``frames``, until its input ends."""
    read_end, write_end = os.pipe()
    try:
        child.Sandbox(io.BytesIO(b"".join(frames)), write_end).serve()
        os.close(write_end)
        data = b""
        while chunk := os.read(read_end, 65536):
            data += chunk
    finally:
        os.close(read_end)
    answers = []
    while data:
        (size,) = child.HEADER.unpack(data[: child.HEADER.size])
        answers.append(data[child.HEADER.size : child.HEADER.size + size])
        data = data[child.HEADER.size + size :]
    return answers


def test_a_check_loads_the_script_once_and_names_what_is_wrong() -> None:
    good = Script.of(TRANSFORM)
    bad = Script.of("THIS IS NOT VALID")
    none = Script.of("const x = 1;")
    answers = _served(_request("check", good), _request("check", bad), _request("check", none))
    assert answers[0] == b"K"
    assert answers[1].startswith(b"X")
    assert answers[2].startswith(b"X")
    assert b"function" in answers[2]


def test_a_run_answers_each_event_in_order() -> None:
    script = Script.of(TRANSFORM)
    events = [{"n": 1}, {"drop": True}, {"fail": True}, {"spin": True}, {"n": 5}]
    answers = _served(
        _request("run", script, now=1_700_000_000_000.0, count=len(events)),
        *(child.frame(orjson.dumps(event)) for event in events),
    )
    assert [answer[:1] for answer in answers] == [b"E", b"D", b"X", b"X", b"E"]
    assert orjson.loads(answers[0][1:]) == {"n": 1, "seen": True}
    assert b"asked to fail" in answers[2]
    # The loop was cut off by the CPU limit, and the script still runs afterwards.
    assert orjson.loads(answers[4][1:]) == {"n": 5, "seen": True}


def test_input_that_ends_mid_request_ends_the_loop() -> None:
    script = Script.of(TRANSFORM)
    header = _request("run", script, now=0.0, count=2)
    assert _served(header, child.frame(b'{"n": 1}')) == []
    assert _served(header[:2]) == []


FOLD = """
function fold(accum, event) {
  if (event.fail) throw new Error("asked to fail");
  accum.n += event.n;
  return accum;
}
"""


def _fold_request(
    script: Script, slots: list[dict[str, Any]], steps: list[tuple[int, Any]]
) -> list[bytes]:
    header = _request(
        "fold",
        script,
        now=1_700_000_000_000.0,
        count=len(steps),
        slots=[{"accum": accum, "aggregate": {"event_count": 1}} for accum in slots],
    )
    return _served(
        header, *(child.frame(b"%d\n" % slot + orjson.dumps(event)) for slot, event in steps)
    )


def test_a_fold_sends_each_slots_accumulated_event_once_after_its_last_step() -> None:
    script = Script.of(FOLD)
    steps = [(0, {"n": 1}), (1, {"n": 10}), (0, {"n": 2}), (1, {"n": 20}), (0, {"n": 4})]
    answers = _fold_request(script, [{"n": 0}, {"n": 0}], steps)
    # One answer a step, in order; the accumulated event only after a slot's last step.
    assert [answer[:1] for answer in answers] == [b"F", b"F", b"F", b"E", b"E"]
    assert orjson.loads(answers[3][1:])["n"] == 30
    assert orjson.loads(answers[4][1:])["n"] == 7


def test_a_slots_last_step_that_fails_is_preceded_by_the_kept_accumulated_event() -> None:
    script = Script.of(FOLD)
    steps = [(0, {"n": 1}), (0, {"n": 2}), (1, {"n": 5}), (0, {"fail": True})]
    answers = _fold_request(script, [{"n": 0}, {"n": 0}], steps)
    assert [answer[:1] for answer in answers] == [b"F", b"F", b"E", b"A", b"X"]
    slot, _, accum = answers[3][1:].partition(b"\n")
    assert (int(slot), orjson.loads(accum)["n"]) == (0, 3)
    assert b"asked to fail" in answers[4]
