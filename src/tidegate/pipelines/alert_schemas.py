"""Pipeline alerts as the platform's Terraform provider (v5) sends and reads them:
``{pipeline_id, component_kind, component_id, inputs, active, alert_config: {general,
evaluation, alert_payload}}`` (docs/api-pipelines.md, "Pipeline alerts")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

AlertType = Literal["threshold", "absence", "change"]
OPERATIONS = ("DEFAULT", "SUM", "MIN", "MAX", "AVG", "SET_INTERSECTION", "DIST_CONCAT", "CUSTOM")
CHANGE_OPERATORS = frozenset(
    {
        "percent_change_greater",
        "percent_change_greater_or_equal",
        "percent_change_less",
        "percent_change_less_or_equal",
        "value_change_greater",
        "value_change_greater_or_equal",
        "value_change_less",
        "value_change_less_or_equal",
    }
)
OTHER_OPERATORS = frozenset(
    {
        "contains",
        "ends_with",
        "equal",
        "exists",
        "greater",
        "greater_or_equal",
        "is_array",
        "is_boolean",
        "is_empty",
        "is_ip_in_cidr_range",
        "is_metric",
        "is_null",
        "is_number",
        "is_object",
        "is_string",
        "less",
        "less_or_equal",
        "regex_match",
        "starts_with",
    }
)
MAX_DEPTH = 4
MAX_EXPRESSIONS = 50
Text = str


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Expression(_Model):
    field: str = Field(min_length=1, max_length=200)
    str_operator: str = Field(max_length=40)
    value: float | str | None = None
    # The provider marshals an unset ``negate`` as ``{}`` (a Go struct): false.
    negate: bool | dict[str, Any] = False

    @field_validator("value")
    @classmethod
    def _value(cls, value: float | str | None) -> float | str | None:
        if isinstance(value, str) and len(value) > 1024:
            raise ValueError("at most 1024 characters")
        if isinstance(value, float) and value != value:  # NaN
            raise ValueError("must be a number")
        return value

    @field_validator("negate")
    @classmethod
    def _negate(cls, value: bool | dict[str, Any]) -> bool:
        return value if isinstance(value, bool) else False


class Conditional(_Model):
    expressions: list[Expression | Conditional] | None = Field(
        default=None, max_length=MAX_EXPRESSIONS
    )
    logical_operation: Literal["AND", "OR"] = "AND"

    def depth(self) -> int:
        nested = [item.depth() for item in self.expressions or [] if isinstance(item, Conditional)]
        return 1 + max(nested, default=0)

    def operators(self) -> set[str]:
        found: set[str] = set()
        for item in self.expressions or []:
            found |= item.operators() if isinstance(item, Conditional) else {item.str_operator}
        return found


class General(_Model):
    name: str = Field(min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=1024)


class Evaluation(_Model):
    alert_type: AlertType
    event_type: Literal["log", "metric"]
    operation: Literal[OPERATIONS] | None = None  # type: ignore[valid-type]
    conditional: Conditional | None = None
    window_type: Literal["tumbling", "sliding"] = "tumbling"
    window_duration_minutes: int = Field(default=5, ge=1, le=1440)
    group_by: list[str] | None = Field(default=None, max_length=50)
    event_timestamp: str | None = Field(default=None, min_length=1, max_length=100)
    script: str | None = Field(default=None, min_length=1, max_length=5000)

    @model_validator(mode="after")
    def _shape(self) -> Evaluation:
        if self.alert_type == "absence":
            return self
        if self.operation is None:
            raise ValueError(f"a {self.alert_type} alert needs an operation")
        if self.conditional is None:
            raise ValueError(f"a {self.alert_type} alert needs a conditional")
        if self.conditional.depth() > MAX_DEPTH:
            raise ValueError(f"conditional: at most {MAX_DEPTH} levels")
        allowed = CHANGE_OPERATORS if self.alert_type == "change" else OTHER_OPERATORS
        wrong = sorted(self.conditional.operators() - allowed)
        if wrong:
            raise ValueError(f"conditional: operators not allowed here: {', '.join(wrong)}")
        if (self.operation == "CUSTOM") != (self.script is not None):
            raise ValueError("script goes with the CUSTOM operation, and only with it")
        if self.event_type == "metric" and self.event_timestamp is not None:
            raise ValueError("a metric alert has no event_timestamp")
        return self


class Header(_Model):
    header_name: str = Field(min_length=1, max_length=256)
    header_value: str = Field(min_length=1, max_length=4096)


class Auth(_Model):
    strategy: Literal["none", "basic", "bearer"]
    user: str | None = Field(default=None, max_length=256)
    password: str | None = Field(default=None, max_length=1024)
    token: str | None = Field(default=None, max_length=4096)


class Service(_Model):
    name: Literal["slack", "pager_duty", "webhook", "log_analysis"]
    uri: str | None = Field(default=None, max_length=2048)
    message_text: str | None = Field(default=None, max_length=10_000)
    summary: str | None = Field(default=None, max_length=1024)
    source: str | None = Field(default=None, max_length=1024)
    routing_key: str | None = Field(default=None, max_length=256)
    event_action: str | None = Field(default=None, max_length=32)
    severity: Literal["INFO", "WARNING", "ERROR", "CRITICAL"] | None = None
    subject: str | None = Field(default=None, max_length=1024)
    body: str | None = Field(default=None, max_length=10_000)
    ingestion_key: str | None = Field(default=None, max_length=256)
    auth: Auth | None = None
    headers: list[Header] | None = Field(default=None, max_length=50)
    method: Literal["post", "put", "patch", "delete", "get", "head", "options", "trace"] | None = (
        None
    )


class Throttling(_Model):
    window_secs: int = Field(default=60, ge=1, le=86_400)
    threshold: int = Field(default=1, ge=1, le=10_000)


class AlertPayload(_Model):
    service: Service
    throttling: Throttling = Field(default_factory=Throttling)


class AlertConfig(_Model):
    general: General
    evaluation: Evaluation
    alert_payload: AlertPayload


class AlertIn(_Model):
    """The provider's ``Alert``; ids in the body are read-only (the path rules)."""

    id: str | None = Field(default=None, max_length=36)
    pipeline_id: str | None = Field(default=None, max_length=36)
    component_kind: str | None = Field(default=None, max_length=20)
    component_id: str | None = Field(default=None, max_length=36)
    inputs: list[str] = Field(default_factory=list, max_length=50)
    alert_config: AlertConfig
    active: bool = True


class AlertOut(BaseModel):
    id: str
    pipeline_id: str
    component_kind: str
    component_id: str
    inputs: list[str]
    alert_config: dict[str, Any]
    active: bool
