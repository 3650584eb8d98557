"""Outgoing e-mail through the SMTP settings (``smtp_*``).

smtplib is blocking, so a message is sent in a worker thread, bounded by
``smtp_timeout_s``. With no ``smtp_host`` nothing is sent (``send`` answers False).

Services never send inside the request's transaction (an SMTP server taking seconds
would hold SQLite's one write lock meanwhile): they put messages in an ``Outbox``, and
the endpoint sends it after the commit (``send_all`` as a background task).
"""

from __future__ import annotations

import asyncio
import logging
import smtplib
from dataclasses import dataclass
from email.message import EmailMessage

from tidegate.config import Settings

log = logging.getLogger(__name__)


def _send(settings: Settings, message: EmailMessage) -> None:
    assert settings.smtp_host is not None
    with smtplib.SMTP(
        settings.smtp_host, settings.smtp_port, timeout=settings.smtp_timeout_s
    ) as smtp:
        if settings.smtp_starttls:
            smtp.starttls()
        if settings.smtp_username:
            smtp.login(settings.smtp_username, settings.smtp_password or "")
        smtp.send_message(message)


@dataclass(frozen=True, slots=True)
class Mail:
    to: str
    subject: str
    body: str


Outbox = list[Mail]


async def send_all(settings: Settings, outbox: Outbox) -> None:
    for message in outbox:
        await send(settings, to=message.to, subject=message.subject, body=message.body)


async def send(settings: Settings, *, to: str, subject: str, body: str) -> bool:
    """True when the server accepted the message; failures are logged, never raised
    (the caller's work is done; the person can ask again)."""
    if not settings.smtp_host:
        return False
    message = EmailMessage()
    message["From"] = settings.smtp_from
    message["To"] = to
    message["Subject"] = subject
    message.set_content(body)
    try:
        await asyncio.to_thread(_send, settings, message)
    except (OSError, smtplib.SMTPException) as error:
        log.warning("could not send mail (%s): %s", subject, type(error).__name__)
        return False
    return True
