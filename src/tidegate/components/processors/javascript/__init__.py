"""Tenant JavaScript, run with QuickJS in sandbox processes with CPU-time, memory and
wall-clock limits (``sandbox``); ``child`` is the sandbox process's program."""

from tidegate.components.processors.javascript.sandbox import (
    Limits,
    Outcome,
    Sandbox,
    Script,
    ScriptUser,
    Slot,
    shared_sandbox,
)

__all__ = ["Limits", "Outcome", "Sandbox", "Script", "ScriptUser", "Slot", "shared_sandbox"]
