"""The registry: ``(kind, type name or alias)`` -> ``Component``.

``catalogue.REGISTRY`` is the one instance holding every type tidegate runs; tests may
build their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tidegate.components.base import KIND_ALIASES, Component, ComponentKind

__all__ = ["Registry", "UnknownComponent", "canonical_kind"]


class UnknownComponent(LookupError):
    """No component of that kind has that type name."""

    def __init__(self, kind: str, type_: str) -> None:
        super().__init__(f"no {kind} type {type_!r}")
        self.kind = kind
        self.type = type_


def canonical_kind(kind: str) -> ComponentKind:
    """``transform`` -> ``processor``, ``sink`` -> ``destination``; KeyError otherwise."""
    return KIND_ALIASES[kind]


class Registry:
    def __init__(self, components: Iterable[Component[Any]]) -> None:
        self._by_name: dict[tuple[ComponentKind, str], Component[Any]] = {}
        self._components: list[Component[Any]] = []
        for component in components:
            for name in component.names:
                key = (component.kind, name)
                if key in self._by_name:
                    raise ValueError(f"{component.kind} type {name!r} registered twice")
                self._by_name[key] = component
            self._components.append(component)

    def get(self, kind: str, type_: str) -> Component[Any]:
        """The component, by its type name or an alias; ``UnknownComponent`` otherwise."""
        try:
            return self._by_name[(canonical_kind(kind), type_)]
        except KeyError:
            raise UnknownComponent(kind, type_) from None

    def find(self, kind: str, type_: str) -> Component[Any] | None:
        try:
            return self.get(kind, type_)
        except UnknownComponent:
            return None

    def names(self, kind: str) -> list[str]:
        """Every type name and alias of a kind, sorted (for schemas and messages)."""
        wanted = canonical_kind(kind)
        return sorted(name for (each, name) in self._by_name if each == wanted)

    def of_kind(self, kind: str) -> list[Component[Any]]:
        wanted = canonical_kind(kind)
        return [component for component in self._components if component.kind == wanted]

    def __iter__(self) -> Iterator[Component[Any]]:
        return iter(self._components)
