"""The pipeline condition language (Exclude of the Throttle processor, filters, routes).

A condition is a JSON object, either an expression

    {"field": ".path", "str_operator": "equal", "value": "x", "negate": false,
     "case_sensitive": false}

or a group `{"logical_operation": "AND" | "OR", "expressions": [condition, ...]}`
nested at most five groups deep. `compile_condition` validates it once, rejecting
anything it does not understand with a message naming where, and returns a `Condition`:
a fast predicate over events.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from tidegate.processing.fields import MISSING, FieldPath, FieldPathError, string_form
from tidegate.processing.linear_regex import LinearRegex, RegexError

__all__ = [
    "MAX_GROUP_DEPTH",
    "OPERATORS",
    "Condition",
    "ConditionError",
    "Predicate",
    "compile_condition",
]

Predicate = Callable[[Any], bool]

MAX_GROUP_DEPTH: Final = 5
_MAX_EXPRESSIONS: Final = 1000
_MAX_VALUE_LENGTH: Final = 10_000

_UNARY: Final = frozenset(
    {
        "exists",
        "is_array",
        "is_boolean",
        "is_empty",
        "is_metric",
        "is_null",
        "is_number",
        "is_object",
        "is_string",
    }
)
_STRING_OPS: Final = frozenset({"contains", "ends_with", "starts_with"})
_NUMBER_OPS: Final = frozenset({"greater", "greater_or_equal", "less", "less_or_equal"})
_BINARY: Final = _STRING_OPS | _NUMBER_OPS | {"equal", "is_ip_in_cidr_range", "regex_match"}
OPERATORS: Final = _UNARY | _BINARY

_LEAF_KEYS: Final = frozenset({"field", "str_operator", "value", "negate", "case_sensitive"})
_GROUP_KEYS: Final = frozenset({"logical_operation", "expressions"})
_METRIC_KINDS: Final = frozenset({"absolute", "incremental"})
_METRIC_TYPES: Final = frozenset(
    {"counter", "gauge", "set", "distribution", "histogram", "summary"}
)


class ConditionError(ValueError):
    """An invalid condition; `location` says where (`expressions[1].value`)."""

    def __init__(self, message: str, location: str = "") -> None:
        self.location = location
        self.reason = message
        super().__init__(f"{location}: {message}" if location else message)


class Condition:
    """A compiled condition. Call it with an event; `predicate` is the raw function."""

    __slots__ = ("predicate", "spec")

    def __init__(self, predicate: Predicate, spec: Mapping[str, Any]) -> None:
        self.predicate: Predicate = predicate
        self.spec: Mapping[str, Any] = spec

    def __call__(self, event: Any) -> bool:
        return self.predicate(event)

    def __repr__(self) -> str:
        return f"Condition({dict(self.spec)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Condition) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(repr(self.spec))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source_type: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # Lets pydantic models hold a `Condition` field validated from its JSON form.
        return core_schema.no_info_plain_validator_function(
            _validate_for_pydantic,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda condition: dict(condition.spec)
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """The condition's JSON form, for API documents (groups nest up to 5 levels)."""
        leaf = {
            "type": "object",
            "required": ["field", "str_operator"],
            "additionalProperties": False,
            "properties": {
                "field": {"type": "string", "description": "An event field path: `.app`"},
                "str_operator": {"enum": sorted(OPERATORS)},
                "value": {"type": ["string", "number"], "description": '`""` when unary'},
                "negate": {"type": "boolean", "default": False},
                "case_sensitive": {"type": "boolean", "default": False},
            },
        }
        return {
            "type": "object",
            "description": "`{logical_operation: AND|OR, expressions: [leaf or group]}`",
            "required": ["expressions"],
            "additionalProperties": False,
            "properties": {
                "logical_operation": {"enum": ["AND", "OR"], "default": "AND"},
                "expressions": {
                    "type": "array",
                    "items": {"anyOf": [leaf, {"type": "object"}]},
                },
            },
        }


def _validate_for_pydantic(value: Any) -> Condition:
    if isinstance(value, Condition):
        return value
    return compile_condition(value)


def compile_condition(spec: Any, /) -> Condition:
    """Validate a condition's JSON form and compile it into a `Condition`.

    Raises `ConditionError` (a `ValueError`) naming the offending part.
    """
    predicate = _compile(spec, "", 0)
    return Condition(predicate, spec)


def _compile(spec: Any, where: str, depth: int) -> Predicate:
    if not isinstance(spec, Mapping):
        raise ConditionError("a condition must be a JSON object", where)
    if "expressions" in spec or "logical_operation" in spec:
        return _compile_group(spec, where, depth + 1)
    if "field" in spec or "str_operator" in spec:
        return _compile_leaf(spec, where)
    raise ConditionError(
        "a condition needs either 'expressions' (a group) or 'field' and 'str_operator'",
        where,
    )


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _compile_group(spec: Mapping[str, Any], where: str, depth: int) -> Predicate:
    unknown = sorted(str(key) for key in spec if key not in _GROUP_KEYS)
    if unknown:
        raise ConditionError(
            f"unknown key(s) {', '.join(unknown)} in a group "
            "(allowed: logical_operation, expressions)",
            where,
        )
    if depth > MAX_GROUP_DEPTH:
        raise ConditionError(f"groups nest at most {MAX_GROUP_DEPTH} levels deep", where)
    operation = spec.get("logical_operation", "AND")
    if operation not in ("AND", "OR"):
        raise ConditionError(
            f"must be 'AND' or 'OR', not {operation!r}", _at(where, "logical_operation")
        )
    expressions = spec.get("expressions")
    if not isinstance(expressions, list):
        raise ConditionError("must be a list of conditions", _at(where, "expressions"))
    if not expressions:
        raise ConditionError(
            "must not be empty (leave the condition out, or null, for no condition)",
            _at(where, "expressions"),
        )
    if len(expressions) > _MAX_EXPRESSIONS:
        raise ConditionError(
            f"at most {_MAX_EXPRESSIONS} expressions in a group", _at(where, "expressions")
        )
    children = tuple(
        _compile(child, f"{_at(where, 'expressions')}[{i}]", depth)
        for i, child in enumerate(expressions)
    )
    if len(children) == 1:
        return children[0]
    if operation == "AND":
        if len(children) == 2:
            first, second = children
            return lambda event: first(event) and second(event)

        def all_of(event: Any) -> bool:
            for child in children:
                if not child(event):
                    return False
            return True

        return all_of
    if len(children) == 2:
        first, second = children
        return lambda event: first(event) or second(event)

    def any_of(event: Any) -> bool:
        for child in children:
            if child(event):
                return True
        return False

    return any_of


def _compile_leaf(spec: Mapping[str, Any], where: str) -> Predicate:
    unknown = sorted(str(key) for key in spec if key not in _LEAF_KEYS)
    if unknown:
        raise ConditionError(
            f"unknown key(s) {', '.join(unknown)} in an expression "
            "(allowed: field, str_operator, value, negate, case_sensitive)",
            where,
        )
    if "field" not in spec:
        raise ConditionError("an expression needs a 'field'", where)
    if "str_operator" not in spec:
        raise ConditionError("an expression needs a 'str_operator'", where)
    try:
        path = FieldPath.parse(spec["field"])
    except FieldPathError as error:
        raise ConditionError(str(error), _at(where, "field")) from None
    operator = spec["str_operator"]
    if not isinstance(operator, str) or operator not in OPERATORS:
        raise ConditionError(
            f"unknown operator {operator!r}; expected one of {', '.join(sorted(OPERATORS))}",
            _at(where, "str_operator"),
        )
    negate = _flag(spec, "negate", where)
    case_sensitive = _flag(spec, "case_sensitive", where)
    value_where = _at(where, "value")
    value = spec.get("value")
    if operator in _UNARY:
        if value not in (None, ""):
            raise ConditionError(f"operator {operator} takes no value", value_where)
        test = _UNARY_TESTS[operator]
    else:
        test = _binary_test(operator, value, case_sensitive, value_where)
    predicate = _bind_fast(path, operator, value, case_sensitive, test) or _bind(path, test)
    if negate:
        return lambda event: not predicate(event)
    return predicate


def _flag(spec: Mapping[str, Any], key: str, where: str) -> bool:
    value = spec.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConditionError("must be true or false", _at(where, key))
    return value


def _bind(path: FieldPath, test: Callable[[Any], bool]) -> Predicate:
    key = path.single_key
    if key is not None:
        return lambda event: test(event.get(key, MISSING))
    getter = path.getter()
    return lambda event: test(getter(event))


def _bind_fast(
    path: FieldPath,
    operator: str,
    value: Any,
    case_sensitive: bool,
    test: Callable[[Any], bool],
) -> Predicate | None:
    """One-call predicates for the commonest expressions on a plain key (`.host`)."""
    key = path.single_key
    if key is None:
        return None
    if operator == "exists":
        return lambda event: key in event
    if operator == "equal" and isinstance(value, str):
        target = value if case_sensitive else value.casefold()
        if case_sensitive:

            def equal_exact(event: Any) -> bool:
                field = event.get(key, MISSING)
                return field == target if field.__class__ is str else test(field)

            return equal_exact

        def equal_folded(event: Any) -> bool:
            field = event.get(key, MISSING)
            return field.casefold() == target if field.__class__ is str else test(field)

        return equal_folded
    return None


# Value tests: each takes the field's value (or MISSING) and answers.


def _is_number(value: Any) -> bool:
    cls = value.__class__
    return cls is int or cls is float or (isinstance(value, int | float) and cls is not bool)


def _is_metric(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    inner = value.get("value")
    return (
        isinstance(value.get("name"), str)
        and value.get("kind") in _METRIC_KINDS
        and isinstance(inner, dict)
        and inner.get("type") in _METRIC_TYPES
    )


_UNARY_TESTS: Final[dict[str, Callable[[Any], bool]]] = {
    "exists": lambda value: value is not MISSING,
    "is_array": lambda value: isinstance(value, list),
    "is_boolean": lambda value: isinstance(value, bool),
    "is_empty": lambda value: (
        (value == "" or value == {} or value == []) and isinstance(value, str | dict | list)
    ),
    "is_metric": _is_metric,
    "is_null": lambda value: value is None or value is MISSING,
    "is_number": _is_number,
    "is_object": lambda value: isinstance(value, dict),
    "is_string": lambda value: isinstance(value, str),
}


def _number_from(value: Any) -> float | None:
    """A finite number from a JSON number or a numeric string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _binary_test(
    operator: str, value: Any, case_sensitive: bool, where: str
) -> Callable[[Any], bool]:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConditionError(f"operator {operator} needs a string or number value", where)
    if isinstance(value, str) and len(value) > _MAX_VALUE_LENGTH:
        raise ConditionError(f"a value is at most {_MAX_VALUE_LENGTH} characters", where)
    if operator in _NUMBER_OPS:
        return _number_test(operator, value, where)
    if operator == "equal":
        return _equal_test(value, case_sensitive)
    if operator == "regex_match":
        return _regex_test(value, case_sensitive, where)
    if operator == "is_ip_in_cidr_range":
        return _cidr_test(value, where)
    return _string_test(operator, string_form(value), case_sensitive)


def _number_test(operator: str, value: Any, where: str) -> Callable[[Any], bool]:
    bound = _number_from(value)
    if bound is None:
        raise ConditionError(f"operator {operator} needs a number, not {value!r}", where)
    # Field values must be JSON numbers; strings never compare as numbers here.
    if operator == "greater":
        return lambda field: _is_number(field) and field > bound
    if operator == "greater_or_equal":
        return lambda field: _is_number(field) and field >= bound
    if operator == "less":
        return lambda field: _is_number(field) and field < bound
    return lambda field: _is_number(field) and field <= bound


def _equal_test(value: str | int | float, case_sensitive: bool) -> Callable[[Any], bool]:
    text = string_form(value)
    target = text if case_sensitive else text.casefold()
    value_is_number = not isinstance(value, str)
    number = _number_from(value)

    def slow(field: Any) -> bool:
        if field is MISSING or field is None:
            return False
        field_is_number = _is_number(field)
        # Numbers compare numerically when one side is a JSON number and the other
        # is a number or a numeric string (10 == "10" == 10.0).
        if (field_is_number or value_is_number) and number is not None:
            other = _number_from(field)
            if other is not None and (field_is_number or isinstance(field, str)):
                return other == number
        form = string_form(field)
        return (form if case_sensitive else form.casefold()) == target

    if value_is_number:
        return slow
    if case_sensitive:
        return lambda field: field == target if field.__class__ is str else slow(field)
    return lambda field: field.casefold() == target if field.__class__ is str else slow(field)


def _string_test(operator: str, target: str, case_sensitive: bool) -> Callable[[Any], bool]:
    if not case_sensitive:
        target = target.casefold()
    if operator == "contains":
        if case_sensitive:
            return lambda field: isinstance(field, str) and target in field
        return lambda field: isinstance(field, str) and target in field.casefold()
    if operator == "starts_with":
        if case_sensitive:
            return lambda field: isinstance(field, str) and field.startswith(target)
        return lambda field: isinstance(field, str) and field.casefold().startswith(target)
    if case_sensitive:
        return lambda field: isinstance(field, str) and field.endswith(target)
    return lambda field: isinstance(field, str) and field.casefold().endswith(target)


def _regex_test(value: Any, case_sensitive: bool, where: str) -> Callable[[Any], bool]:
    if not isinstance(value, str):
        raise ConditionError("regex_match needs a regular expression string", where)
    # RE2, not `re`: a tenant's pattern runs on the event loop for every event, so it
    # must be linear in the subject. What RE2 cannot run that way is refused here, at
    # save time, instead of stalling the worker later.
    try:
        pattern = LinearRegex(value, case_sensitive=case_sensitive)
    except RegexError as error:
        raise ConditionError(
            f"invalid regular expression {value!r}: {error} (regex_match uses RE2 syntax: "
            "no backreferences or lookaround)",
            where,
        ) from None
    search = pattern.search
    return lambda field: isinstance(field, str) and search(field)


def _cidr_test(value: Any, where: str) -> Callable[[Any], bool]:
    if not isinstance(value, str):
        raise ConditionError("is_ip_in_cidr_range needs a CIDR string such as '10.0.0.0/8'", where)
    try:
        network = ipaddress.ip_network(value.strip(), strict=False)
    except ValueError as error:
        raise ConditionError(f"invalid CIDR range {value!r}: {error}", where) from None

    def test(field: Any) -> bool:
        if not isinstance(field, str):
            return False
        try:
            address = ipaddress.ip_address(field.strip())
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            if network.version == 4:
                return address.ipv4_mapped in network
        return address.version == network.version and address in network

    return test
