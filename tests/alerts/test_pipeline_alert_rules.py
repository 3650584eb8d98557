"""The judgement of a pipeline alert's window (tidegate.alerts.pipeline_alerts): the
provider's conditionals on the window's aggregate, absence, and change between
windows; and the provider's services mapped onto view-alert channels."""

from __future__ import annotations

from typing import Any

from tidegate.alerts.pipeline_alerts import channel_of, fires, holds


def _leaf(field: str, operator: str, value: Any, negate: bool = False) -> dict[str, Any]:
    return {"field": field, "str_operator": operator, "value": value, "negate": negate}


def test_threshold_conditionals_on_the_window() -> None:
    window = {"event_count": 12, "byte_count": 480}
    more = {"expressions": [_leaf(".event_count", "greater", 10)], "logical_operation": "AND"}
    assert holds(more, window)
    assert not holds(more, {"event_count": 10, "byte_count": 0})
    both = {
        "expressions": [
            _leaf(".event_count", "greater_or_equal", 12),
            _leaf(".byte_count", "less", 100),
        ],
        "logical_operation": "AND",
    }
    assert not holds(both, window)
    assert holds({**both, "logical_operation": "OR"}, window)
    nested = {
        "expressions": [
            {"expressions": [_leaf(".event_count", "equal", 12)], "logical_operation": "AND"},
            _leaf(".byte_count", "less", 100, negate=True),
        ],
        "logical_operation": "AND",
    }
    assert holds(nested, window)
    # A field the aggregate does not have: comparisons do not hold, exists is false.
    assert not holds({"expressions": [_leaf(".status", "greater", 1)]}, window)
    assert not holds({"expressions": [_leaf(".status", "exists", "")]}, window)
    assert not holds({"expressions": []}, window)


def test_string_and_type_operators_on_an_aggregate_judged_on_events() -> None:
    """The filter and route processors' tests, on the fields a script's aggregate has."""
    window = {"host": "web-3.eu", "message": "Payment FAILED", "ip": "10.1.2.3", "n": 4}

    def one(field: str, operator: str, value: Any, negate: bool = False) -> bool:
        leaf = _leaf(field, operator, value, negate)
        return holds({"expressions": [leaf], "logical_operation": "AND"}, window)

    assert one(".message", "contains", "failed")  # case folded by default, as filters
    assert not one(".message", "contains", "refund")
    assert one(".message", "contains", "refund", negate=True)
    assert one(".host", "starts_with", "web-")
    assert one(".host", "ends_with", ".eu")
    assert one(".host", "regex_match", "^web-[0-9]+\\.eu$")
    assert one(".ip", "is_ip_in_cidr_range", "10.0.0.0/8")
    assert not one(".ip", "is_ip_in_cidr_range", "192.168.0.0/16")
    assert one(".host", "is_string", "")
    assert not one(".n", "is_string", "")
    assert not one(".missing", "contains", "x")
    # A value the operator cannot take (a pattern that does not compile) never holds.
    assert not one(".host", "regex_match", "(")


def test_absence_and_change() -> None:
    absence = {"alert_type": "absence", "event_type": "log"}
    assert fires(absence, {"event_count": 0, "byte_count": 0}, None)
    assert not fires(absence, {"event_count": 1, "byte_count": 9}, None)
    change = {
        "alert_type": "change",
        "conditional": {
            "expressions": [_leaf(".event_count", "percent_change_greater", 50)],
            "logical_operation": "AND",
        },
    }
    assert not fires(change, {"event_count": 100, "byte_count": 0}, None)  # no previous
    assert fires(change, {"event_count": 20, "byte_count": 0}, {"event_count": 100})
    assert fires(change, {"event_count": 160, "byte_count": 0}, {"event_count": 100})
    assert not fires(change, {"event_count": 140, "byte_count": 0}, {"event_count": 100})
    assert fires(change, {"event_count": 1, "byte_count": 0}, {"event_count": 0})
    by_value = {
        "alert_type": "change",
        "conditional": {"expressions": [_leaf(".event_count", "value_change_less_or_equal", 5)]},
    }
    assert fires(by_value, {"event_count": 12, "byte_count": 0}, {"event_count": 8})
    assert not fires(by_value, {"event_count": 20, "byte_count": 0}, {"event_count": 8})


def test_services_become_view_alert_channels() -> None:
    webhook = channel_of(
        {
            "name": "webhook",
            "uri": "https://hooks.example.com/x",
            "method": "put",
            "message_text": "plain text",
            "auth": {"strategy": "basic", "user": "u", "password": "p"},
            "headers": [{"header_name": "x-a", "header_value": "b"}],
        }
    )
    assert webhook is not None
    assert webhook.integration == "webhook"
    assert webhook.http_method == "PUT"
    assert webhook.headers == {"x-a": "b", "Authorization": "Basic dTpw"}
    assert webhook.body_template == {"message": "plain text"}
    slack = channel_of({"name": "slack", "uri": "https://hooks.slack.com/services/a"})
    assert slack is not None
    assert slack.url == "https://hooks.slack.com/services/a"
    pagerduty = channel_of({"name": "pager_duty", "routing_key": "rk"})
    assert pagerduty is not None
    assert pagerduty.key == "rk"
    logs = channel_of(
        {"name": "log_analysis", "ingestion_key": "k", "severity": "ERROR", "subject": "s"}
    )
    assert logs is not None
    assert logs.integration == "log_analysis"
    assert logs.body_template == {"subject": "s", "severity": "ERROR"}
