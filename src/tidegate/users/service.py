"""People: creating users, invitations and password resets. No HTTP here.

Tokens sent to people (invitations, resets) are 256 random bits, stored as keyed
hashes, used once, and expire (``invitation_ttl_s``, ``password_reset_ttl_s``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate import mail
from tidegate.auth.passwords import hash_password
from tidegate.auth.secrets import hash_secret
from tidegate.auth.signin_limit import FailureCounter
from tidegate.clock import now_ms
from tidegate.config import Settings
from tidegate.errors import BadRequest
from tidegate.models import Membership, User
from tidegate.users import repository

TOKEN_DOMAIN = "tidegate:user-token"
INVITATION = "invitation"
PASSWORD_RESET = "password-reset"
# Where the web app takes a token (docs/people.md); the token is in the link's query.
INVITATION_PATH = "/accept-invitation"
PASSWORD_RESET_PATH = "/reset-password"


def link(settings: Settings, path: str, token: str) -> str:
    return f"{settings.public_url.rstrip('/')}{path}?token={quote(token)}"


async def issue_token(*, session: AsyncSession, user_id: str, purpose: str, ttl_s: float) -> str:
    token = secrets.token_urlsafe(32)
    await repository.add_token(
        session=session,
        user_id=user_id,
        purpose=purpose,
        token_hash=hash_secret(token, domain=TOKEN_DOMAIN),
        expires_ms=now_ms() + int(ttl_s * 1000),
    )
    return token


@dataclass(frozen=True, slots=True)
class Invitation:
    link: str
    # Queued for sending after the commit (SMTP is configured).
    emailed: bool


async def find_or_create_user(*, session: AsyncSession, email: str) -> User:
    return await repository.find_or_create_user(session=session, email=email.strip().lower())


async def add_member(
    *, session: AsyncSession, user_id: str, account_id: str, role: str
) -> Membership:
    found = await repository.membership(session=session, user_id=user_id, account_id=account_id)
    if found is not None:
        found.role = role
        return found
    created = Membership(user_id=user_id, account_id=account_id, role=role)
    session.add(created)
    await session.flush()
    return created


async def invite(
    *, session: AsyncSession, settings: Settings, outbox: mail.Outbox, user: User, account_name: str
) -> Invitation:
    """A new invitation for ``user`` (replacing any earlier one), put in ``outbox`` when
    SMTP is configured; its link is returned either way, for the inviting admin."""
    token = await issue_token(
        session=session, user_id=user.id, purpose=INVITATION, ttl_s=settings.invitation_ttl_s
    )
    url = link(settings, INVITATION_PATH, token)
    if settings.smtp_host:
        outbox.append(
            mail.Mail(
                to=user.email,
                subject=f"You are invited to {account_name} on tidegate",
                body=(
                    f"You have been invited to the account {account_name}.\n\n"
                    f"Set your password here (the link works once):\n{url}\n"
                ),
            )
        )
    return Invitation(link=url, emailed=bool(settings.smtp_host))


async def _take(*, session: AsyncSession, token: str, purpose: str) -> User:
    taken = await repository.take_token(
        session=session, token_hash=hash_secret(token, domain=TOKEN_DOMAIN)
    )
    if taken is None or taken[1] != purpose or taken[2] < now_ms():
        raise BadRequest("This link is not valid (used, replaced or expired); ask for a new one")
    user = await repository.user_by_id(session=session, user_id=taken[0])
    if user is None:
        raise BadRequest("This link is not valid; ask for a new one")
    return user


async def _set_password(*, session: AsyncSession, user: User, password_hash: str) -> None:
    user.password_hash = password_hash
    user.verified = True
    # A new password ends every session and CLI token made with the old one.
    user.cli_token_sealed = None
    await repository.end_sessions_of(session=session, user_id=user.id)
    await session.flush()


async def accept_invitation(*, session: AsyncSession, token: str, password: str) -> User:
    # Hashed before the transaction's first statement: the slow hash must not hold
    # SQLite's write lock.
    password_hash = await hash_password(password)
    user = await _take(session=session, token=token, purpose=INVITATION)
    await _set_password(session=session, user=user, password_hash=password_hash)
    return user


async def request_password_reset(
    *,
    session: AsyncSession,
    settings: Settings,
    limiter: FailureCounter,
    outbox: mail.Outbox,
    email: str,
) -> None:
    """Mails a reset link when the user exists; says nothing either way. Requests for
    one e-mail count like failed sign-ins, so nobody can flood a mailbox with them."""
    email = email.strip().lower()
    key = f"reset:{email}"
    if await limiter.blocked(key):
        return
    await limiter.failed(key)
    user = await repository.user_by_email(session=session, email=email)
    if user is None:
        return
    token = await issue_token(
        session=session,
        user_id=user.id,
        purpose=PASSWORD_RESET,
        ttl_s=settings.password_reset_ttl_s,
    )
    outbox.append(
        mail.Mail(
            to=user.email,
            subject="Reset your tidegate password",
            body=(
                "Someone asked to reset the password of this e-mail on tidegate.\n\n"
                f"Choose a new one here (the link works once):\n"
                f"{link(settings, PASSWORD_RESET_PATH, token)}\n\n"
                "If it was not you, ignore this message.\n"
            ),
        )
    )


async def confirm_password_reset(*, session: AsyncSession, token: str, password: str) -> User:
    password_hash = await hash_password(password)  # before the transaction, as above
    user = await _take(session=session, token=token, purpose=PASSWORD_RESET)
    await _set_password(session=session, user=user, password_hash=password_hash)
    return user
