"""The pure graph rules and run order, without a database."""

from __future__ import annotations

import pytest

from tidegate.errors import Conflict, ValidationFailed
from tidegate.pipelines.graph import (
    GraphNode,
    dependents_of,
    refuse_if_depended_on,
    split_input,
    topological_order,
    validate_graph,
)


def node(node_id: str, kind: str = "processor", type_: str = "filter", *inputs: str) -> GraphNode:
    outputs = ("dropped",) if type_ == "throttle" else ()  # what the registry says
    return GraphNode(id=node_id, kind=kind, type=type_, inputs=tuple(inputs), outputs=outputs)


def test_split_input() -> None:
    assert split_input("abc") == ("abc", None)
    assert split_input("abc.dropped") == ("abc", "dropped")


def test_valid_graph_and_run_order() -> None:
    nodes = [
        node("sink", "destination", "blackhole", "t", "t.dropped"),
        node("t", "processor", "throttle", "f"),
        node("f", "processor", "filter", "src"),
        node("src", "source", "http"),
    ]
    validate_graph(nodes)
    assert [n.id for n in topological_order(nodes)] == ["src", "f", "t", "sink"]
    assert dependents_of(nodes, "t") == ["sink"]
    with pytest.raises(Conflict):
        refuse_if_depended_on(nodes, "t")
    refuse_if_depended_on(nodes, "sink")


def test_cycle_is_named_in_the_direction_of_the_data() -> None:
    nodes = [node("src", "source", "http"), node("a", "processor", "filter", "src", "c"),
             node("b", "processor", "filter", "a"), node("c", "processor", "filter", "b")]  # fmt: skip
    with pytest.raises(ValidationFailed) as caught:
        validate_graph(nodes)
    cycle = caught.value.errors[0].params["cycle"]
    assert cycle in (["a", "b", "c", "a"], ["b", "c", "a", "b"], ["c", "a", "b", "c"])
    assert (
        "a -> b -> c" in caught.value.message
        or "c -> a -> b" in caught.value.message
        or ("b -> c -> a" in caught.value.message)
    )


@pytest.mark.parametrize(
    "nodes",
    [
        [node("src", "source", "http", "x")],
        [node("f", "processor", "filter", "ghost")],
        [node("f", "processor", "filter", "f")],
        [node("d", "destination", "blackhole"), node("f", "processor", "filter", "d")],
        [node("g", "processor", "filter"), node("f", "processor", "filter", "g.dropped")],
        [node("t", "processor", "throttle"), node("f", "processor", "filter", "t.spilled")],
    ],
)
def test_invalid_graphs(nodes: list[GraphNode]) -> None:
    with pytest.raises(ValidationFailed):
        validate_graph(nodes)


def test_problems_of_the_saved_node_point_into_the_body() -> None:
    nodes = [node("f", "processor", "filter", "ok", "ghost"), node("ok", "source", "http")]
    with pytest.raises(ValidationFailed) as caught:
        validate_graph(nodes, changed="f")
    assert caught.value.errors[0].instance_path == "/inputs/1"
    with pytest.raises(ValidationFailed) as elsewhere:
        validate_graph(nodes, changed="ok")
    assert elsewhere.value.errors[0].instance_path is None
    assert "node f" in elsewhere.value.errors[0].message
