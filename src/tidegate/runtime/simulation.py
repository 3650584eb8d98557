"""Simulation: what each node would emit for sample events, with nothing stored or
sent. Every simulation compiles the pipeline afresh with in-memory throttles, so it
neither reads nor moves the windows of the live processors (on Redis or in memory);
all the sample events are decided at one instant."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.enterprise.service import has_feature
from tidegate.errors import ErrorItem, Forbidden, NotFound, ValidationFailed
from tidegate.pipelines import dataplane
from tidegate.pipelines.node_configs import FilterConfig, validate_user_config
from tidegate.processing.throttle import ThrottleConfig, ThrottleProcessor
from tidegate.runtime import simulation_schemas as schemas
from tidegate.runtime.compiler import (
    FilterProcessor,
    PipelineBroken,
    ThrottleNode,
    compile_pipeline,
    run_graph,
)

__all__ = ["simulate_pipeline", "simulate_processor"]

THROTTLE_FEATURE = "throttle-processor"


def _fresh_throttle(
    _pipeline_id: str, _node_id: str, _fingerprint: str, config: ThrottleConfig
) -> ThrottleProcessor:
    return ThrottleProcessor(config)


async def simulate_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str, events: list[dict[str, Any]]
) -> schemas.PipelineSimulation:
    graph = await dataplane.draft_graph(session=session, pipeline_id=pipeline_id)
    if graph is None or graph.account_id != account_id:
        raise NotFound(f"No pipeline {pipeline_id}")
    try:
        compiled = compile_pipeline(graph, throttle_for=_fresh_throttle)
    except PipelineBroken as error:
        raise ValidationFailed(str(error)) from None
    enabled = compiled.has_throttle and await has_feature(
        session=session, account_id=account_id, name=THROTTLE_FEATURE
    )
    outputs = await run_graph(compiled, events, gateway_route_id=None, throttle_enabled=enabled)
    return schemas.PipelineSimulation(
        pipeline_id=compiled.pipeline_id,
        revision=compiled.revision,
        throttle_enabled=enabled,
        nodes=[
            schemas.SimulatedNode(
                id=node.id,
                kind=node.kind,
                type=node.type,
                title=node.title,
                received=outputs[node.id].received,
                output=outputs[node.id].main,
                dropped=outputs[node.id].dropped if node.type == "throttle" else None,
            )
            for node in compiled.nodes
        ],
    )


async def simulate_processor(
    *, session: AsyncSession, account_id: str, body: schemas.SimulateProcessor
) -> schemas.ProcessorSimulation:
    kind = body.processor.type
    if kind == "throttle" and not await has_feature(
        session=session, account_id=account_id, name=THROTTLE_FEATURE
    ):
        raise Forbidden(
            f"The Throttle processor is a beta feature: enable the '{THROTTLE_FEATURE}' "
            "feature first",
            errors=[
                ErrorItem(
                    keyword="feature",
                    message=f"the '{THROTTLE_FEATURE}' feature is not enabled",
                    instance_path="/processor/type",
                    params={"feature": THROTTLE_FEATURE},
                )
            ],
        )
    try:
        config = validate_user_config(
            kind="processor", type_=kind, user_config=body.processor.user_config
        )
    except ValidationFailed as error:
        raise _under_processor(error) from None
    events = body.events
    if isinstance(config, ThrottleConfig):
        result = await ThrottleNode(ThrottleProcessor(config)).run(events, throttle_enabled=True)
        dropped = result.dropped or []
    else:
        assert isinstance(config, FilterConfig)
        result = await FilterProcessor(config).run(events, throttle_enabled=True)
        kept = {id(event) for event in result.main}
        dropped = [event for event in events if id(event) not in kept]
    return schemas.ProcessorSimulation(
        type=kind, received=len(events), output=result.main, dropped=dropped
    )


def _under_processor(error: ValidationFailed) -> ValidationFailed:
    """Pointers of ``validate_user_config`` are relative to the node body; here the
    configuration sits under ``/processor``."""
    for item in error.errors:
        if item.instance_path is not None:
            item.instance_path = ("/processor" + item.instance_path)[:200]
    message = error.message.replace("body.user_config", "body.processor.user_config", 1)
    return ValidationFailed(message, context="body", errors=error.errors)
