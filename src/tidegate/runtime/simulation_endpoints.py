"""HTTP for the simulation endpoints (management: authenticated, account-scoped, v3
envelope and errors). Registered before the pipelines router so that
``/v3/pipeline/simulate-processor`` is never taken for a pipeline id."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.error_models import V3_ERRORS
from tidegate.api.session import SessionDep
from tidegate.auth.dependencies import AccountId
from tidegate.runtime import simulation
from tidegate.runtime import simulation_schemas as schemas

router = APIRouter(prefix="/v3/pipeline", tags=["Pipeline simulation"], responses=V3_ERRORS)

PipelineIdPath = Annotated[
    str,
    Path(min_length=1, max_length=36, pattern=r"^[0-9A-Za-z_-]+$", description="The pipeline's id"),
]

SIMULATE = "/v3/pipeline/{pipeline_id}/simulate"
SIMULATE_PROCESSOR = "/v3/pipeline/simulate-processor"


@router.post(
    "/simulate-processor",
    summary="Run sample events through one processor configuration",
    description="Nothing is stored or sent; a throttle starts from empty windows and "
    "decides every sample event at one instant.",
)
async def simulate_processor(
    body: schemas.SimulateProcessor, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.ProcessorSimulation]:
    data = await simulation.simulate_processor(session=session, account_id=account_id, body=body)
    return envelope(
        data,
        type="processor_simulation",
        pk=None,
        links=SelfLinks(create=link("post", SIMULATE_PROCESSOR)),
    )


@router.post(
    "/{pipeline_id}/simulate",
    summary="Run sample events through a pipeline",
    description="Answers what every node would emit (a throttle's `dropped` output "
    "too) for the sample events. Nothing is stored or sent, and live throttle windows "
    "are neither read nor changed: throttles start from empty windows.",
)
async def simulate_pipeline(
    pipeline_id: PipelineIdPath,
    body: schemas.SimulatePipeline,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.PipelineSimulation]:
    data = await simulation.simulate_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, events=body.events
    )
    return envelope(
        data,
        type="pipeline_simulation",
        pk="pipeline_id",
        links=SelfLinks(create=link("post", SIMULATE)),
        related={"pipeline": "/v3/pipeline/{pipeline_id}"},
    )
