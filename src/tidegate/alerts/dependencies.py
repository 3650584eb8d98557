"""Request dependencies of the alert configuration endpoints."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from tidegate.app_state import app_state
from tidegate.kit.destination_guard import DestinationPolicy, policy_from_setting


def _destination_policy(request: Request) -> DestinationPolicy:
    """Where tenant-chosen URLs may point (``TIDEGATE_DESTINATION_ALLOW``)."""
    return policy_from_setting(app_state(request).settings.destination_allow)


DestinationPolicyDep = Annotated[DestinationPolicy, Depends(_destination_policy)]
