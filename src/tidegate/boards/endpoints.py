"""HTTP for the v1 boards API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.path_params import id_path
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.boards import schemas, service

router = APIRouter(prefix="/v1/config/board", tags=["Boards"], responses=LEGACY_ERRORS)

BoardIdPath = Annotated[str, id_path(alias="boardid", description="The board's id")]


# Raw rows straight to JSON, no session, no models (api/raw_json.py).
@router.get("", summary="List the account's boards", response_model=list[schemas.BoardSummary])
async def list_boards(request: Request, account_id: AccountId) -> Response:
    return json_response(await service.list_boards(db=app_state(request).db, account_id=account_id))


@router.post("", summary="Create a board")
async def create_board(
    body: schemas.BoardCreate, session: SessionDep, account_id: AccountId
) -> schemas.Board:
    return await service.create_board(session=session, account_id=account_id, body=body)


@router.get("/{boardid}", summary="Get a board with its graphs", response_model=schemas.Board)
async def get_board(board_id: BoardIdPath, request: Request, account_id: AccountId) -> Response:
    db = app_state(request).db
    return json_response(await service.read_board(db=db, account_id=account_id, board_id=board_id))


@router.patch("/{boardid}", summary="Update a board's title or graphs")
async def update_board(
    board_id: BoardIdPath, body: schemas.BoardUpdate, session: SessionDep, account_id: AccountId
) -> schemas.Board:
    return await service.update_board(
        session=session, account_id=account_id, board_id=board_id, body=body
    )


@router.delete("/{boardid}", summary="Delete a board")
async def delete_board(
    board_id: BoardIdPath, session: SessionDep, account_id: AccountId
) -> schemas.Board:
    return await service.delete_board(session=session, account_id=account_id, board_id=board_id)
