"""A pipeline's nodes as a graph: the rules every save must keep, and the order in
which the data plane runs them. Pure functions, no database.

Edges run from an input to the node that names it. A node's input is the id of an
upstream node of the same pipeline (its main output), or ``<node id>.<output>``: one of
the outputs the node's component declares for its configuration (a Throttle's
``dropped``, a Route's output names and ``_unmatched``), given in ``GraphNode.outputs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from tidegate.errors import Conflict, ErrorItem, ValidationFailed

__all__ = [
    "DROPPED",
    "GraphNode",
    "dependents_of",
    "refuse_if_depended_on",
    "split_input",
    "topological_order",
    "unconnected",
    "validate_graph",
]

DROPPED: Final = "dropped"
"""The name of a Throttle processor's second output (``components.base.DROPPED``)."""


@dataclass(frozen=True, slots=True)
class GraphNode:
    id: str
    kind: str  # source | processor | destination
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...] = ()
    """Names of the outputs beside the main one (from the component registry)."""


def split_input(ref: str) -> tuple[str, str | None]:
    """``"abc"`` -> ``("abc", None)``; ``"abc.dropped"`` -> ``("abc", "dropped")``."""
    node_id, dot, output = ref.partition(".")
    return (node_id, output) if dot else (ref, None)


def validate_graph(nodes: Sequence[GraphNode], *, changed: str | None = None) -> None:
    """Raise the v3 validation error (400) when the nodes do not form a valid graph.

    ``changed`` is the node being saved: its problems are reported with a JSON Pointer
    into the request body (``/inputs/0``); problems elsewhere name the node.
    """
    by_id = {node.id: node for node in nodes}
    problems: list[ErrorItem] = []
    for node in nodes:
        problems.extend(_input_problems(node, by_id, changed))
    if problems:
        raise ValidationFailed(problems[0].message, context="body", errors=problems[:200])
    cycle = _find_cycle(nodes)
    if cycle is not None:
        path = " -> ".join(cycle)
        raise ValidationFailed(
            f"inputs form a cycle: {path}",
            context="body",
            errors=[
                ErrorItem(
                    keyword="cycle",
                    message=f"inputs form a cycle: {path}",
                    instance_path="/inputs",
                    params={"cycle": cycle},
                )
            ],
        )


def _input_problems(
    node: GraphNode, by_id: dict[str, GraphNode], changed: str | None
) -> list[ErrorItem]:
    def problem(index: int | None, message: str, **params: object) -> ErrorItem:
        if node.id == changed:
            pointer = "/inputs" if index is None else f"/inputs/{index}"
        else:
            pointer = None
            message = f"node {node.id}: {message}"
        return ErrorItem(
            keyword="inputs", message=message, instance_path=pointer, params=dict(params)
        )

    if node.kind == "source":
        if node.inputs:
            return [problem(None, "a source takes no inputs")]
        return []
    found: list[ErrorItem] = []
    seen: set[str] = set()
    for index, ref in enumerate(node.inputs):
        if ref in seen:
            found.append(problem(index, f"input {ref} is listed twice", input=ref))
            continue
        seen.add(ref)
        upstream_id, output = split_input(ref)
        upstream = by_id.get(upstream_id)
        if upstream is None:
            found.append(problem(index, f"input {ref} names no node of this pipeline", input=ref))
        elif upstream.id == node.id:
            found.append(problem(index, f"a node cannot be its own input ({ref})", input=ref))
        elif upstream.kind == "destination":
            found.append(
                problem(index, f"input {ref} is a destination, which has no output", input=ref)
            )
        elif output is not None and output not in upstream.outputs:
            offered = ", ".join(upstream.outputs) or "none but its main output"
            found.append(
                problem(
                    index,
                    f"input {ref}: no output '{output}' (other outputs: {offered})",
                    input=ref,
                )
            )
    return found


def _find_cycle(nodes: Sequence[GraphNode]) -> list[str] | None:
    """One cycle as ``[a, b, ..., a]`` (following the data's direction), or None."""
    downstream: dict[str, list[str]] = {node.id: [] for node in nodes}
    for node in nodes:
        for ref in node.inputs:
            upstream_id, _output = split_input(ref)
            if upstream_id in downstream:
                downstream[upstream_id].append(node.id)
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(downstream, white)
    for start in downstream:
        if colour[start] != white:
            continue
        # Iterative depth-first search: the stack holds (node, index of next child).
        stack: list[tuple[str, int]] = [(start, 0)]
        colour[start] = grey
        while stack:
            current, index = stack[-1]
            children = downstream[current]
            if index == len(children):
                colour[current] = black
                stack.pop()
                continue
            stack[-1] = (current, index + 1)
            child = children[index]
            if colour[child] == grey:
                on_path = [node_id for node_id, _ in stack]
                return [*on_path[on_path.index(child) :], child]
            if colour[child] == white:
                colour[child] = grey
                stack.append((child, 0))
    return None


def dependents_of(nodes: Iterable[GraphNode], node_id: str) -> list[str]:
    """Ids of the nodes that take ``node_id`` (or one of its outputs) as an input."""
    return [
        node.id
        for node in nodes
        if node.id != node_id and any(split_input(ref)[0] == node_id for ref in node.inputs)
    ]


def refuse_if_depended_on(nodes: Iterable[GraphNode], node_id: str) -> None:
    """409 naming the dependents, before a node is deleted."""
    dependents = dependents_of(nodes, node_id)
    if dependents:
        message = (
            f"node {node_id} is an input of {', '.join(dependents)}; "
            "remove it from their inputs first"
        )
        raise Conflict(
            message,
            errors=[
                ErrorItem(
                    keyword="dependents",
                    message=message,
                    params={"node_id": node_id, "dependents": dependents},
                )
            ],
        )


def topological_order(nodes: Sequence[GraphNode]) -> list[GraphNode]:
    """The nodes with every node after all its inputs (sources first). Assumes a graph
    that passed ``validate_graph``; ties keep the given order."""
    by_id = {node.id: node for node in nodes}
    remaining = {
        node.id: {split_input(ref)[0] for ref in node.inputs if split_input(ref)[0] in by_id}
        for node in nodes
    }
    ordered: list[GraphNode] = []
    while remaining:
        ready = [node.id for node in nodes if node.id in remaining and not remaining[node.id]]
        if not ready:
            raise ValueError("the graph has a cycle")
        for node_id in ready:
            del remaining[node_id]
            ordered.append(by_id[node_id])
        for pending in remaining.values():
            pending.difference_update(ready)
    return ordered


def unconnected(nodes: Sequence[GraphNode]) -> list[str]:
    """Ids of the nodes with a loose end: a processor or destination without inputs, or
    a source or processor none of whose outputs any node takes."""
    taken = {split_input(ref)[0] for node in nodes for ref in node.inputs}
    return [
        node.id
        for node in nodes
        if (node.kind != "source" and not node.inputs)
        or (node.kind != "destination" and node.id not in taken)
    ]
