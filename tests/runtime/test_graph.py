"""The compiled graph without a database: run order, the dropped edge, filters, and a
throttle of an account without the feature."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tidegate.components.processors.throttle import THROTTLE_FEATURE
from tidegate.pipelines.dataplane import PipelineGraph
from tidegate.pipelines.graph import GraphNode, topological_order
from tidegate.pipelines.schemas import Node
from tidegate.runtime.compiler import compile_pipeline, run_graph

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def node(
    id_: str, kind: str, type_: str, inputs: list[str], config: dict[str, Any] | None = None
) -> Node:
    return Node(
        id=id_,
        pipeline_id="p",
        kind=kind,  # type: ignore[arg-type]
        type=type_,
        title=id_,
        inputs=inputs,
        user_config=config or {},
        gateway_route_id="r" if kind == "source" else None,
        created_at=NOW,
        updated_at=NOW,
    )


def graph(*nodes: Node) -> PipelineGraph:
    graph_nodes = [GraphNode(n.id, n.kind, n.type, tuple(n.inputs)) for n in nodes]
    ordered = topological_order(graph_nodes)
    by_id = {n.id: n for n in nodes}
    return PipelineGraph(
        pipeline_id="p",
        account_id="a",
        revision=1,
        nodes=tuple(by_id[g.id] for g in ordered),
        graph=tuple(ordered),
    )


THROTTLE = frozenset({THROTTLE_FEATURE})


APP_EQ_A = {"field": ".app", "str_operator": "equal", "value": "a"}


async def test_nodes_run_after_their_inputs_whatever_the_stored_order() -> None:
    # Stored out of order: the destination first, then the filter, then the source.
    pipeline = compile_pipeline(
        graph(
            node("d", "destination", "blackhole", ["f"]),
            node("f", "processor", "filter", ["s"], {"condition": APP_EQ_A}),
            node("s", "source", "http", []),
        ),
    )
    assert [n.id for n in pipeline.nodes] == ["s", "f", "d"]
    outputs = await run_graph(
        pipeline, [{"app": "a"}, {"app": "b"}], gateway_route_id="r", features=THROTTLE
    )
    assert outputs["d"].main == [{"app": "a"}]
    assert outputs["f"].received == 2


async def test_filter_allow_and_drop() -> None:
    pipeline = compile_pipeline(
        graph(
            node("s", "source", "http", []),
            node("allow", "processor", "filter", ["s"], {"condition": APP_EQ_A}),
            node("drop", "processor", "filter", ["s"], {"condition": APP_EQ_A, "action": "drop"}),
            node("da", "destination", "blackhole", ["allow"]),
            node("dd", "destination", "blackhole", ["drop"]),
        ),
    )
    batch = [{"app": "a", "n": 1}, {"app": "B"}, {"app": "A", "n": 3}, {}]
    outputs = await run_graph(pipeline, batch, gateway_route_id="r", features=THROTTLE)
    assert outputs["da"].main == [batch[0], batch[2]]  # case-insensitive by default
    assert outputs["dd"].main == [batch[1], batch[3]]


async def test_dropped_edge_carries_the_throttles_discards() -> None:
    pipeline = compile_pipeline(
        graph(
            node("s", "source", "http", []),
            node("t", "processor", "throttle", ["s"], {"threshold": 2, "window_ms": 60_000}),
            node("kept", "destination", "blackhole", ["t"]),
            node("spill", "destination", "blackhole", ["t.dropped"]),
        ),
    )
    batch = [{"n": index} for index in range(5)]
    outputs = await run_graph(pipeline, batch, gateway_route_id="r", features=THROTTLE)
    assert outputs["kept"].main == batch[:2]
    assert outputs["spill"].main == batch[2:]
    assert outputs["t"].dropped == batch[2:]


async def test_inputs_concatenate_in_listed_order_and_a_diamond_duplicates() -> None:
    pipeline = compile_pipeline(
        graph(
            node("s", "source", "http", []),
            node("t", "processor", "throttle", ["s"], {"threshold": 1, "window_ms": 60_000}),
            node("all", "destination", "blackhole", ["t.dropped", "t"]),
            node("twice", "destination", "blackhole", ["s", "t"]),
        ),
    )
    batch = [{"n": 0}, {"n": 1}]
    outputs = await run_graph(pipeline, batch, gateway_route_id="r", features=THROTTLE)
    assert outputs["all"].main == [{"n": 1}, {"n": 0}]
    assert outputs["twice"].main == [{"n": 0}, {"n": 1}, {"n": 0}]


async def test_throttle_without_the_feature_passes_everything() -> None:
    pipeline = compile_pipeline(
        graph(
            node("s", "source", "http", []),
            node("t", "processor", "throttle", ["s"], {"threshold": 1, "window_ms": 60_000}),
            node("kept", "destination", "blackhole", ["t"]),
            node("spill", "destination", "blackhole", ["t.dropped"]),
        ),
    )
    batch = [{"n": index} for index in range(3)]
    outputs = await run_graph(pipeline, batch, gateway_route_id="r", features=frozenset())
    assert outputs["kept"].main == batch
    assert outputs["spill"].main == []


async def test_only_sources_bound_to_the_route_emit() -> None:
    other = node("s2", "source", "http", [])
    other = other.model_copy(update={"gateway_route_id": "another"})
    pipeline = compile_pipeline(
        graph(
            node("s", "source", "http", []),
            other,
            node("d1", "destination", "blackhole", ["s"]),
            node("d2", "destination", "blackhole", ["s2"]),
        ),
    )
    outputs = await run_graph(pipeline, [{"n": 1}], gateway_route_id="r", features=THROTTLE)
    assert outputs["d1"].main == [{"n": 1}]
    assert outputs["d2"].main == []
    # A simulation (no route) feeds every source.
    outputs = await run_graph(pipeline, [{"n": 1}], gateway_route_id=None, features=THROTTLE)
    assert outputs["d2"].main == [{"n": 1}]


async def test_unreachable_nodes_receive_nothing() -> None:
    pipeline = compile_pipeline(
        graph(
            node("s", "source", "http", []),
            node("t", "processor", "throttle", [], {"threshold": 1, "window_ms": 10}),
            node("d", "destination", "blackhole", ["t.dropped"]),
        ),
    )
    outputs = await run_graph(pipeline, [{"n": 1}], gateway_route_id="r", features=THROTTLE)
    assert outputs["t"].main == []
    assert outputs["d"].main == []
