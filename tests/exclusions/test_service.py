"""Exclusion rule query rules (search syntax and reserved fields), without HTTP or a
database."""

from __future__ import annotations

import pytest

from tidegate.errors import ValidationFailed
from tidegate.exclusions.service import check_query


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("_retention:30", "_retention"),
        ("_RETENTION:30", "_RETENTION"),
        ("-_retention:30", "_retention"),
        ("(_mezmo_line_size:>100)", "_mezmo_line_size"),
        ("a _mezmo_line_size:(>=1 <5)", "_mezmo_line_size"),
        ("x OR _retention.days:1", "_retention"),
        ('"quoted" _retention:1', "_retention"),
    ],
)
def test_reserved_fields_are_refused(query: str, field: str) -> None:
    with pytest.raises(ValidationFailed) as raised:
        check_query(query)
    assert raised.value.message.startswith("query:")
    assert field in raised.value.message
    assert raised.value.status == 400


@pytest.mark.parametrize("query", ["a (", '"unterminated', "a:b:c", "AND", "x" * 4097])
def test_queries_that_do_not_parse_are_refused(query: str) -> None:
    with pytest.raises(ValidationFailed) as raised:
        check_query(query)
    assert raised.value.message.startswith("query: ")
    assert raised.value.status == 400


@pytest.mark.parametrize(
    "query",
    [
        "error",
        "me myself OR I",
        "level:[warning,error] -app:healthcheck",
        "robots.txt OR favicon.ico OR .well-known",
        "response:(>=200 <300)",
        "_retention",  # a plain term searches the line text, not the field
        '"_retention:30"',  # a phrase, not a field
        'msg:"has \\" _retention:1 inside"',
        "my_retention:1",
        "x._retention:1",
        "retention:1",
    ],
)
def test_other_queries_pass(query: str) -> None:
    check_query(query)
