"""Sealer.open_stored: ``open`` remembered per sealer (a bounded LRU keyed by the sealed
text), for values read from the database (keys' secrets, alert channels)."""

from __future__ import annotations

from tidegate.auth.secrets import STORED_CACHE_SIZE, Sealer

OLD, NEW, OTHER = b"\x01" * 32, b"\x02" * 32, b"\x03" * 32


def test_open_stored_answers_what_open_answers() -> None:
    rotated = Sealer(NEW, previous=[OLD])
    for sealed in (Sealer(NEW).seal("sta_current"), Sealer(OLD).seal("sta_previous")):
        assert rotated.open_stored(sealed) == rotated.open(sealed) is not None
    foreign = Sealer(OTHER).seal("sta_foreign")
    assert rotated.open_stored(foreign) is None
    assert rotated.open_stored("not a token") is None


def test_a_stored_value_is_opened_once() -> None:
    sealer = Sealer(NEW)
    sealed = [sealer.seal(f"sta_{i}") for i in range(3)]
    for _ in range(4):
        assert [sealer.open_stored(value) for value in sealed] == ["sta_0", "sta_1", "sta_2"]
    info = sealer.open_stored.cache_info()  # type: ignore[attr-defined]
    assert (info.misses, info.hits) == (3, 9)
    assert info.maxsize == STORED_CACHE_SIZE


def test_the_cache_is_the_sealers_own() -> None:
    """A sealer without the previous secret (after a rotation and a restart) does not
    open what another sealer remembered opening."""
    sealed = Sealer(OLD).seal("sta_previous")
    assert Sealer(NEW, previous=[OLD]).open_stored(sealed) == "sta_previous"
    assert Sealer(NEW).open_stored(sealed) is None
