"""Simulation: what each node would emit for sample events, with nothing stored or
sent. Every simulation compiles the pipeline afresh (``BuildContext(simulation=True)``:
in-memory state), so it neither reads nor moves the state of the live processors (a
throttle's windows on Redis or in memory); all the sample events are decided at one
instant. Which component does what comes from the registry."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.components.base import DROPPED, BuildContext, NodeRef, RunContext
from tidegate.components.catalogue import REGISTRY
from tidegate.components.validation import validate_user_config
from tidegate.enterprise.service import has_feature
from tidegate.errors import ErrorItem, Forbidden, NotFound, ValidationFailed
from tidegate.pipelines import dataplane
from tidegate.runtime import simulation_schemas as schemas
from tidegate.runtime.compiler import PipelineBroken, compile_pipeline, run_graph
from tidegate.runtime.features import enabled_features

__all__ = ["simulate_pipeline", "simulate_processor"]

THROTTLE_FEATURE = "throttle-processor"
_SIMULATION = BuildContext(simulation=True)


async def simulate_pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str, events: list[dict[str, Any]]
) -> schemas.PipelineSimulation:
    graph = await dataplane.draft_graph(session=session, pipeline_id=pipeline_id)
    if graph is None or graph.account_id != account_id:
        raise NotFound(f"No pipeline {pipeline_id}")
    try:
        compiled = compile_pipeline(graph, context=_SIMULATION)
    except PipelineBroken as error:
        raise ValidationFailed(str(error)) from None
    features = await enabled_features(
        session=session, account_id=account_id, needed=compiled.features
    )
    outputs = await run_graph(compiled, events, gateway_route_id=None, features=features)
    return schemas.PipelineSimulation(
        pipeline_id=compiled.pipeline_id,
        revision=compiled.revision,
        throttle_enabled=THROTTLE_FEATURE in features,
        nodes=[
            schemas.SimulatedNode(
                id=node.id,
                kind=node.kind,
                type=node.type,
                title=node.title,
                received=outputs[node.id].received,
                output=outputs[node.id].main,
                dropped=outputs[node.id].dropped,
                outputs=dict(outputs[node.id].named),
            )
            for node in compiled.nodes
        ],
    )


async def simulate_processor(
    *, session: AsyncSession, account_id: str, body: schemas.SimulateProcessor
) -> schemas.ProcessorSimulation:
    type_ = body.processor.type
    try:
        config = validate_user_config(
            kind="processor", type_=type_, user_config=body.processor.user_config
        )
    except ValidationFailed as error:
        raise _under_processor(error) from None
    component = REGISTRY.get("processor", type_)
    feature = component.needs.feature
    if feature is not None and not await has_feature(
        session=session, account_id=account_id, name=feature
    ):
        raise Forbidden(
            f"The {type_} processor is a beta feature: enable the '{feature}' feature first",
            errors=[
                ErrorItem(
                    keyword="feature",
                    message=f"the '{feature}' feature is not enabled",
                    instance_path="/processor/type",
                    params={"feature": feature},
                )
            ],
        )
    events = body.events
    runtime = component.build(config, _SIMULATION, NodeRef("simulation", account_id, "p", ""))
    result = await runtime.run(
        events,
        context=RunContext(features=frozenset() if feature is None else frozenset({feature})),
    )
    named = dict(result.named)
    return schemas.ProcessorSimulation(
        type=type_,
        received=len(events),
        output=result.main,
        dropped=[*result.discarded, *named.pop(DROPPED, [])],
        outputs=named,
    )


def _under_processor(error: ValidationFailed) -> ValidationFailed:
    """Pointers of ``validate_user_config`` are relative to the node body; here the
    configuration sits under ``/processor``."""
    for item in error.errors:
        if item.instance_path is not None:
            item.instance_path = ("/processor" + item.instance_path)[:200]
    message = error.message.replace("body.user_config", "body.processor.user_config", 1)
    message = message.replace("body.type", "body.processor.type", 1)
    return ValidationFailed(message, context="body", errors=error.errors)
