"""A real SMTP server (aiosmtpd) on a loopback port, keeping what it receives."""

from __future__ import annotations

from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message
from typing import Any

import pytest
from tests.smtp import LoopbackSmtp


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"

    def to(self, address: str) -> list[Message]:
        return [m for m in self.messages if m["To"] == address]


@pytest.fixture
def smtp_server() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    controller = LoopbackSmtp(inbox)
    controller.start()
    try:
        yield inbox, controller.bound_port
    finally:
        controller.stop()
