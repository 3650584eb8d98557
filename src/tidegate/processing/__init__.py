"""Pipeline processing: the condition language and processors (Throttle)."""

from tidegate.processing.conditions import Condition, ConditionError, compile_condition
from tidegate.processing.fields import MISSING, FieldPath, FieldPathError

__all__ = [
    "MISSING",
    "Condition",
    "ConditionError",
    "FieldPath",
    "FieldPathError",
    "compile_condition",
]
