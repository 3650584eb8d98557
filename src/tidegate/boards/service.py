"""Boards of an account. No HTTP here."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.boards import repository, schemas
from tidegate.db.engine import Database
from tidegate.errors import NotFound
from tidegate.models import Board
from tidegate.models.base import utcnow


async def _short_id(*, session: AsyncSession, account_id: str) -> str:
    short_id = await repository.short_id_of(session=session, account_id=account_id)
    if short_id is None:  # the account went away under the caller's credentials
        raise NotFound()
    return short_id


def board_data(board: Board | Any, short_id: str) -> dict[str, Any]:
    """The board's document as plain data (api/raw_json.py), from the ORM object or a
    raw record (``repository.board_record``)."""
    return {
        "boardid": board.id,
        "account": short_id,
        "title": board.title,
        "graphs": list(board.graphs or []),
    }


def board_schema(board: Board, short_id: str) -> schemas.Board:
    return schemas.Board(**board_data(board, short_id))


async def list_boards(*, db: Database, account_id: str) -> list[dict[str, Any]]:
    """The spec's boards (``schemas.BoardSummary``) as plain data (api/raw_json.py)."""
    rows = await repository.board_summaries(db=db, account_id=account_id)
    if not rows:  # the account went away under the caller's credentials
        raise NotFound()
    return [
        {"boardid": row.id, "account": row.short_id, "title": row.title}
        for row in rows
        if row.id is not None
    ]


async def create_board(
    *, session: AsyncSession, account_id: str, body: schemas.BoardCreate
) -> schemas.Board:
    short_id = await _short_id(session=session, account_id=account_id)
    now = utcnow()
    board = Board(
        account_id=account_id,
        title=body.title,
        graphs=body.graphs or [],
        created_at=now,
        updated_at=now,
    )
    session.add(board)
    await session.flush()
    return board_schema(board, short_id)


async def _own_board(
    *, session: AsyncSession, account_id: str, board_id: str, for_update: bool = False
) -> Board:
    board = await repository.board_of(
        session=session, account_id=account_id, board_id=board_id, for_update=for_update
    )
    if board is None:
        raise NotFound()
    return board


async def read_board(*, db: Database, account_id: str, board_id: str) -> dict[str, Any]:
    """The board's document as plain data, from one raw read (the board with its
    account's short id); another account's board, or none, is the same 404."""
    board = await repository.board_record(db=db, account_id=account_id, board_id=board_id)
    if board is None:
        raise NotFound()
    return board_data(board, board.short_id)


async def update_board(
    *, session: AsyncSession, account_id: str, board_id: str, body: schemas.BoardUpdate
) -> schemas.Board:
    board = await _own_board(
        session=session, account_id=account_id, board_id=board_id, for_update=True
    )
    if body.title is not None:
        board.title = body.title
    if body.graphs is not None:
        board.graphs = body.graphs
    board.updated_at = utcnow()
    await session.flush()
    return board_schema(board, await _short_id(session=session, account_id=account_id))


async def delete_board(*, session: AsyncSession, account_id: str, board_id: str) -> schemas.Board:
    board = await _own_board(
        session=session, account_id=account_id, board_id=board_id, for_update=True
    )
    deleted = board_schema(board, await _short_id(session=session, account_id=account_id))
    await session.delete(board)
    await session.flush()
    return deleted
