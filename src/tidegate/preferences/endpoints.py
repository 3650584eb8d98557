"""HTTP for a person's preferences: ``/v1/auth/preferences`` (the web app's UTC switch,
query history and starred searches). The signed-in person's own; a key is refused (service)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import CurrentPrincipal
from tidegate.preferences import schemas, service

router = APIRouter(prefix="/v1/auth/preferences", tags=["Sessions"], responses=LEGACY_ERRORS)


@router.get(
    "",
    summary="The signed-in person's preferences (defaults until changed)",
    response_model=schemas.Preferences,
)
async def get_preferences(request: Request, principal: CurrentPrincipal) -> Response:
    user_id = service.person_of(principal)
    return json_response(await service.read(db=app_state(request).db, user_id=user_id))


@router.patch("", summary="Change the signed-in person's preferences (fields left out are kept)")
async def change_preferences(
    body: schemas.PreferencesChange, principal: CurrentPrincipal, session: SessionDep
) -> schemas.Preferences:
    user_id = service.person_of(principal)
    return await service.change(session=session, user_id=user_id, changes=body)


@router.post(
    "/query-history",
    summary="Remember a search the person ran: first in their history, once per query, "
    "with its range and filters, at most 50 kept",
)
async def remember_query(
    body: schemas.RememberQuery, principal: CurrentPrincipal, session: SessionDep
) -> schemas.Preferences:
    user_id = service.person_of(principal)
    return await service.remember_query(session=session, user_id=user_id, search=body)


@router.post(
    "/query-history/forget",
    summary="Forget one query of the person's history (the others keep their order)",
)
async def forget_query(
    body: schemas.ForgetQuery, principal: CurrentPrincipal, session: SessionDep
) -> schemas.Preferences:
    user_id = service.person_of(principal)
    return await service.forget_query(session=session, user_id=user_id, forget=body)


@router.delete("/query-history", summary="Forget the signed-in person's query history")
async def forget_queries(principal: CurrentPrincipal, session: SessionDep) -> schemas.Preferences:
    user_id = service.person_of(principal)
    return await service.forget_queries(session=session, user_id=user_id)


@router.post(
    "/starred",
    summary="Star a search: first among the person's starred searches, once per query, "
    "with its range and filters, kept until unstarred (at most 50; one more is a 409)",
)
async def star_query(
    body: schemas.StarQuery, principal: CurrentPrincipal, session: SessionDep
) -> schemas.Preferences:
    user_id = service.person_of(principal)
    return await service.star_query(session=session, user_id=user_id, search=body)


@router.post(
    "/starred/forget",
    summary="Unstar one search (the others keep their order; the history is untouched)",
)
async def unstar_query(
    body: schemas.ForgetQuery, principal: CurrentPrincipal, session: SessionDep
) -> schemas.Preferences:
    user_id = service.person_of(principal)
    return await service.unstar_query(session=session, user_id=user_id, forget=body)


@router.post(
    "/starred/name",
    summary="Name one starred search, or take its name away (null or blank); its place "
    "is kept (404 when no starred search has the query)",
)
async def name_starred(
    body: schemas.NameStarred, principal: CurrentPrincipal, session: SessionDep
) -> schemas.Preferences:
    user_id = service.person_of(principal)
    return await service.name_starred(session=session, user_id=user_id, naming=body)


@router.post(
    "/starred/move",
    summary="Move one starred search to a position among them (0 is first; past the end "
    "is last); the others keep their order (404 when no starred search has the query)",
)
async def move_starred(
    body: schemas.MoveStarred, principal: CurrentPrincipal, session: SessionDep
) -> schemas.Preferences:
    user_id = service.person_of(principal)
    return await service.move_starred(session=session, user_id=user_id, moving=body)
