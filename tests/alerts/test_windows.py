"""One channel's window logic with time moved by hand (milliseconds)."""

from __future__ import annotations

from typing import Any

from tidegate.alerts.channels import Channel
from tidegate.alerts.windows import ChannelWindow, WindowState

S = 1000


def channel(**fields: Any) -> Channel:
    base: dict[str, Any] = {
        "integration": "webhook",
        "operator": "presence",
        "triggerinterval": "30",
        "triggerlimit": 3,
        "url": "https://example.com/",
    }
    return Channel(**{**base, **fields})


def window(start_ms: int = 0, **fields: Any) -> ChannelWindow:
    return ChannelWindow(channel(**fields), WindowState(), now_ms=start_ms)


def line(n: int) -> dict[str, Any]:
    return {"_line": f"line {n}"}


def events(w: ChannelWindow) -> list[tuple[str, int, int]]:
    return [(f.event, f.at_ms, f.count) for f in w.firings]


def test_presence_immediate_fires_once_when_the_limit_is_reached() -> None:
    w = window(immediate=True)
    w.on_line(0, line(1))
    w.on_line(1 * S, line(2))
    assert w.firings == []
    w.on_line(2 * S, line(3))
    assert events(w) == [("trigger", 2 * S, 3)]
    assert [m["_line"] for m in w.firings[0].matches] == ["line 1", "line 2", "line 3"]
    w.on_line(5 * S, line(4))
    w.advance(29_999)
    assert len(w.firings) == 1  # once per window
    w.advance(30 * S)
    assert len(w.firings) == 1  # immediate only: nothing at the end
    # The next window opens with the next matching line.
    for n, at in enumerate((31, 40, 45)):
        w.on_line(at * S, line(10 + n))
    assert events(w)[1] == ("trigger", 45 * S, 3)


def test_presence_fires_at_the_end_of_the_interval_when_not_immediate() -> None:
    w = window()
    for n in range(4):
        w.on_line(n * S, line(n))
    assert w.firings == []
    w.advance(29_999)
    assert w.firings == []
    w.advance(30 * S)
    assert events(w) == [("trigger", 30 * S, 4)]


def test_presence_below_the_limit_never_fires() -> None:
    w = window()
    w.on_line(0, line(1))
    w.on_line(10 * S, line(2))
    w.on_line(31 * S, line(3))  # a new window: the first held two
    w.advance(120 * S)
    assert w.firings == []


def test_immediate_and_terminal_fire_both() -> None:
    w = window(immediate=True, terminal=True)
    for n in range(3):
        w.on_line(n * S, line(n))
    w.advance(30 * S)
    assert events(w) == [("trigger", 2 * S, 3), ("trigger", 30 * S, 3)]


def test_absence_fires_at_the_end_of_a_quiet_interval() -> None:
    w = window(start_ms=0, operator="absence", triggerlimit=1)
    w.advance(29_999)
    assert w.firings == []
    w.advance(30 * S)
    assert events(w) == [("trigger", 30 * S, 0)]
    w.on_line(35 * S, line(1))
    w.advance(60 * S)
    assert len(w.firings) == 1  # the second window had its line
    w.advance(90 * S)
    assert events(w)[-1] == ("trigger", 90 * S, 0)


def test_absence_after_a_long_pause_fires_once() -> None:
    w = window(start_ms=0, operator="absence", triggerlimit=2)
    w.on_line(1 * S, line(1))
    w.on_line(2 * S, line(2))
    w.advance(600 * S)  # twenty windows, the last nineteen empty
    assert len(w.firings) == 1
    assert w.state.start == 600 * S


def test_presence_autoresolve() -> None:
    w = window(immediate=True, autoresolve=True, autoresolveinterval="1m", autoresolvelimit=1)
    for n in range(3):
        w.on_line(n * S, line(n))
    assert events(w) == [("trigger", 2 * S, 3)]
    w.on_line(30 * S, line(9))  # still happening within the resolve interval
    w.advance(62 * S)
    assert len(w.firings) == 1
    w.advance(122 * S)  # a whole minute with no line
    assert events(w)[-1] == ("resolve", 122 * S, 0)
    assert not w.state.open


def test_absence_autoresolve_when_lines_come_back() -> None:
    w = window(
        start_ms=0,
        operator="absence",
        triggerlimit=1,
        autoresolve=True,
        autoresolveinterval="30",
        autoresolvelimit=2,
    )
    w.advance(30 * S)
    assert events(w) == [("trigger", 30 * S, 0)]
    w.on_line(40 * S, line(1))
    assert len(w.firings) == 1
    w.on_line(41 * S, line(2))
    assert events(w)[-1] == ("resolve", 41 * S, 2)


def test_state_survives_a_round_trip() -> None:
    w = window(immediate=True)
    w.on_line(0, line(1))
    w.on_line(1 * S, line(2))
    again = ChannelWindow(channel(immediate=True), WindowState.load(w.state.dump()), now_ms=0)
    again.on_line(2 * S, line(3))
    assert events(again) == [("trigger", 2 * S, 3)]


async def test_matching_in_a_child_process() -> None:
    from tidegate.alerts.matching import MatchingPool, ViewSpec

    spec = ViewSpec(
        view_id="v",
        account_id="a",
        name="n",
        query="payment failed",
        hosts=(),
        apps=("api",),
        levels=(),
        tags=(),
        since_ms=0,
        channels=(("k", channel(immediate=True, triggerlimit=2).stored()),),
    )
    # In the cursor's column order: id, account, ts, received, host, app, level, env,
    # file, ip, mac, tags (JSON text), meta (JSON text), line, unindexed meta (JSON text).
    rows = [
        (
            n,
            account,
            n,
            1000 + n,
            "h",
            app,
            None,
            None,
            None,
            None,
            None,
            '["t"]',
            '{"k": 1}',
            text,
            None,
        )
        for n, (account, app, text) in enumerate(
            [
                ("a", "api", "payment failed 1"),
                ("b", "api", "payment failed elsewhere"),
                ("a", "web", "payment failed on web"),
                ("a", "api", "payment failed 2"),
            ]
        )
    ]
    pool = MatchingPool()
    try:
        outcome = await pool.run([spec], {}, rows, 2000, None)
    finally:
        pool.close()
    [(view_id, key, firing)] = outcome.firings
    assert (view_id, key, firing.count) == ("v", "k", 2)
    assert [m["_line"] for m in firing.matches] == ["payment failed 1", "payment failed 2"]
    assert outcome.states[("v", "k")]["count"] == 2
    assert firing.matches[0]["_meta"] == {"k": 1}
    assert firing.matches[0]["_tag"] == ["t"]


# -- at the boundary: a window is [start, start + interval) ------------------------------


def test_absence_a_line_in_the_last_millisecond_keeps_its_window_quiet() -> None:
    w = window(start_ms=0, operator="absence", triggerlimit=1)
    w.on_line(30 * S - 1, line(1))
    w.advance(30 * S)
    assert w.firings == []
    w.advance(60 * S - 1)
    assert w.firings == []
    w.advance(60 * S)  # the second window had nothing
    assert events(w) == [("trigger", 60 * S, 0)]


def test_absence_a_line_at_the_window_end_belongs_to_the_next_window() -> None:
    w = window(start_ms=0, operator="absence", triggerlimit=1)
    w.on_line(30 * S, line(1))
    assert events(w) == [("trigger", 30 * S, 0)]  # the first window ended empty
    w.advance(60 * S)
    assert len(w.firings) == 1  # the second had the line
    w.advance(90 * S)
    assert events(w)[-1] == ("trigger", 90 * S, 0)


def test_absence_a_window_end_seen_late_counts_lines_by_their_time() -> None:
    """The evaluator may see a line after the window it was received in has ended (it
    runs behind): the line still counts in its own window, which does not fire."""
    w = window(start_ms=0, operator="absence", triggerlimit=1)
    w.on_line(29 * S, line(1))
    w.advance(45 * S)
    assert w.firings == []


def test_presence_a_line_at_the_window_end_opens_the_next_window() -> None:
    w = window(start_ms=0, triggerlimit=2)
    w.on_line(0, line(1))
    w.on_line(30 * S - 1, line(2))  # the last millisecond: same window, limit reached
    w.on_line(30 * S, line(3))  # opens the next window
    assert events(w) == [("trigger", 30 * S, 2)]
    w.advance(60 * S)
    assert len(w.firings) == 1  # one line in the second window: below the limit


def test_window_scale_shortens_every_window() -> None:
    w = ChannelWindow(
        channel(operator="absence", triggerlimit=1), WindowState(), now_ms=0, scale=0.1
    )
    w.advance(3 * S - 1)
    assert w.firings == []
    w.advance(3 * S)
    assert events(w) == [("trigger", 3 * S, 0)]
