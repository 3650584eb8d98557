"""The one failure of a delivery: a pipeline destination that did not take a request's
events, an alert channel that did not take a notification. Foundation layer: both sides
(``components``, ``runtime``, ``gateway`` and ``alerts``) raise and catch this class."""

from __future__ import annotations

__all__ = ["DeliveryFailed"]


class DeliveryFailed(Exception):
    """A delivery that did not succeed; ``retry`` says whether trying again may help.

    A pipeline destination's failure is always worth retrying (the gateway answers 503
    and the sender resends); an alert channel's may be final (a 4xx from the receiver).
    """

    def __init__(self, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry
