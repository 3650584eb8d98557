"""RFC 6587 framing of a syslog connection's bytes: newline and octet-counted frames,
however the bytes arrive, with a bounded line and a bounded buffer."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples
from tests.search.complexity import assert_linear

from tidegate.syslog.framing import Frame, Framer

LINE_A = b"<13>1 2026-11-26T10:00:00Z web app 1 - - first"
LINE_B = b"<11>Nov 26 10:00:01 web app[2]: second"


def frames_of(*chunks: bytes, max_frame: int = 1024) -> list[Frame]:
    framer = Framer(max_frame=max_frame)
    found = [frame for chunk in chunks for frame in framer.feed(chunk)]
    return found + framer.close()


def test_newline_frames_with_lf_and_crlf_and_blank_lines() -> None:
    found = frames_of(LINE_A + b"\n\n" + LINE_B + b"\r\n")
    assert found == [Frame(LINE_A), Frame(LINE_B)]


def test_octet_counted_frames_and_a_newline_inside_one() -> None:
    multi = b"<13>1 - h a - - - two\nlines"
    stream = b"%d %s%d %s" % (len(LINE_A), LINE_A, len(multi), multi)
    assert frames_of(stream) == [Frame(LINE_A), Frame(multi)]


def test_framings_mix_frame_by_frame() -> None:
    stream = b"%d %s%s\n" % (len(LINE_A), LINE_A, LINE_B)
    assert frames_of(stream) == [Frame(LINE_A), Frame(LINE_B)]


def test_a_last_line_without_its_newline_is_a_line() -> None:
    assert frames_of(LINE_A + b"\n" + LINE_B) == [Frame(LINE_A), Frame(LINE_B)]


def test_a_counted_frame_cut_by_the_end_of_the_connection_is_kept_flagged() -> None:
    assert frames_of(b"100 " + LINE_A) == [Frame(LINE_A, truncated=True)]
    assert frames_of(b"12") == []  # only the start of a length


def test_an_over_long_line_is_cut_and_the_next_line_is_whole() -> None:
    long_line = b"<13>1 - h a - - - " + b"x" * 5000
    found = frames_of(long_line + b"\n" + LINE_B + b"\n", max_frame=1024)
    assert found == [Frame(long_line[:1024], truncated=True), Frame(LINE_B)]


def test_an_over_long_counted_frame_is_cut_and_its_rest_skipped() -> None:
    long_frame = b"<13>1 - h a - - - " + b"y" * 5000
    stream = b"%d %s%d %s" % (len(long_frame), long_frame, len(LINE_A), LINE_A)
    found = frames_of(stream, max_frame=1024)
    assert found == [Frame(long_frame[:1024], truncated=True), Frame(LINE_A)]


def test_a_huge_length_is_skipped_as_it_arrives_never_held() -> None:
    framer = Framer(max_frame=1024)
    assert framer.feed(b"999999999 " + b"z" * 1024) == [Frame(b"z" * 1024, truncated=True)]
    for _ in range(100):
        assert framer.feed(b"z" * 65536) == []
        assert framer.buffered == 0


def test_a_line_without_newline_never_holds_more_than_the_limit() -> None:
    framer = Framer(max_frame=2048)
    found: list[Frame] = []
    for _ in range(200):
        found += framer.feed(b"<13>" + b"w" * 1000)
        assert framer.buffered <= 2048
    found += framer.feed(b"\n" + LINE_B + b"\n")
    assert [frame.truncated for frame in found] == [True, False]
    assert found[1] == Frame(LINE_B)


def test_byte_by_byte_is_linear() -> None:
    def work(size: int) -> object:
        def run() -> object:
            framer = Framer(max_frame=1 << 20)
            data = (LINE_A + b"\n") * size
            return [framer.feed(data[i : i + 1]) for i in range(len(data))]

        return run

    assert_linear(work, 20)


@settings(max_examples=examples(200), deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            st.binary(min_size=1, max_size=300).map(lambda data: b"<" + data.replace(b"\n", b"")),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=10),
)
def test_frames_do_not_depend_on_how_the_bytes_arrive(
    lines: list[tuple[bytes, bool]], cuts: list[int]
) -> None:
    stream = b"".join(
        b"%d %s" % (len(line), line) if counted else line + b"\n" for line, counted in lines
    )
    expected = [Frame(line if counted else line.removesuffix(b"\r")) for line, counted in lines]
    bounds = sorted({0, len(stream), *(cut % (len(stream) + 1) for cut in cuts)})
    chunks = [stream[start:end] for start, end in itertools.pairwise(bounds)]
    assert frames_of(*chunks, max_frame=4096) == frames_of(stream, max_frame=4096) == expected
