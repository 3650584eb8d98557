"""A real SMTP server (aiosmtpd) on a loopback port the test owns from the start."""

from __future__ import annotations

import socket
from collections.abc import Awaitable
from typing import Any

from aiosmtpd.controller import Controller


class LoopbackSmtp(Controller):
    """aiosmtpd's threaded controller on a socket bound before it starts: a port picked
    free and bound later by the server could be taken in between by another test's."""

    def __init__(self, handler: Any) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.bound_port: int = self._socket.getsockname()[1]
        super().__init__(handler, hostname="127.0.0.1", port=self.bound_port)

    def _create_server(self) -> Awaitable[Any]:
        return self.loop.create_server(
            self._factory_invoker, sock=self._socket, ssl=self.ssl_context
        )

    def stop(self, no_assert: bool = False) -> None:
        super().stop(no_assert=no_assert)
        self._socket.close()
