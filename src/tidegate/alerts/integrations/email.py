"""E-mail through the SMTP server in settings (``TIDEGATE_SMTP_*``), with the stdlib
``smtplib`` in a worker thread."""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from email.message import EmailMessage

from tidegate.alerts.channels import Channel
from tidegate.alerts.integrations.base import SendContext
from tidegate.alerts.notification import Notification
from tidegate.config import Settings
from tidegate.delivery import DeliveryFailed
from tidegate.kit.destination_guard import DestinationPolicy


def email_message(channel: Channel, notification: Notification, sender: str) -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = notification.summary(channel.timezone)[:200]
    message["From"] = sender
    message["To"] = ", ".join(channel.emails)
    lines = notification.lines_text()
    body = [
        notification.summary(channel.timezone),
        "",
        f"Time: {notification.time_text(channel.timezone)}",
    ]
    if notification.query:
        body.append(f"Query: {notification.query}")
    if notification.url:
        body.append(f"Open: {notification.url}")
    if lines:
        body += ["", "Lines:", lines]
    message.set_content("\n".join(body))
    return message


def _send(settings: Settings, message: EmailMessage) -> None:
    assert settings.smtp_host is not None
    with smtplib.SMTP(
        settings.smtp_host, settings.smtp_port, timeout=settings.smtp_timeout_s
    ) as smtp:
        if settings.smtp_starttls:
            smtp.starttls(context=ssl.create_default_context())
        if settings.smtp_username:
            smtp.login(settings.smtp_username, settings.smtp_password or "")
        smtp.send_message(message)


class Email:
    name = "email"

    async def vet(self, channel: Channel, *, policy: DestinationPolicy, where: str) -> None:
        return None

    async def send(
        self, channel: Channel, notification: Notification, context: SendContext
    ) -> None:
        settings = context.settings
        if settings.smtp_host is None:
            raise DeliveryFailed("no SMTP server configured (TIDEGATE_SMTP_HOST)", retry=False)
        message = email_message(channel, notification, settings.smtp_from)
        try:
            await asyncio.to_thread(_send, settings, message)
        except smtplib.SMTPRecipientsRefused as error:
            raise DeliveryFailed(f"recipients refused: {error}", retry=False) from None
        except (smtplib.SMTPException, OSError) as error:
            raise DeliveryFailed(f"{type(error).__name__}: {error}") from None
