"""HTTP for invitations and password resets (no credentials: the token is one)."""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks, Request

from tidegate import mail
from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.users import schemas, service

router = APIRouter(prefix="/v1/auth", tags=["People"], responses=LEGACY_ERRORS)


@router.post("/invitation/accept", summary="Set a first password with an invitation's token")
async def accept_invitation(body: schemas.TokenAndPassword, session: SessionDep) -> schemas.Done:
    user = await service.accept_invitation(
        session=session, token=body.token, password=body.password
    )
    return schemas.Done(email=user.email)


@router.post("/password-reset", summary="E-mail a password-reset link (always 200)")
async def request_password_reset(
    body: schemas.PasswordResetRequest,
    request: Request,
    session: SessionDep,
    background: BackgroundTasks,
) -> schemas.Done:
    state = app_state(request)
    outbox: mail.Outbox = []
    await service.request_password_reset(
        session=session,
        settings=state.settings,
        limiter=state.signin_failures,
        outbox=outbox,
        email=str(body.email),
    )
    # Sent after the commit, and after the answer: its timing says nothing either.
    background.add_task(mail.send_all, state.settings, outbox)
    return schemas.Done()


@router.post("/password-reset/confirm", summary="Set a new password with a reset token")
async def confirm_password_reset(
    body: schemas.TokenAndPassword, session: SessionDep
) -> schemas.Done:
    user = await service.confirm_password_reset(
        session=session, token=body.token, password=body.password
    )
    return schemas.Done(email=user.email)
