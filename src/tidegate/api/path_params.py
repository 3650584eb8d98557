"""Path parameters shared by the v1 endpoints."""

from __future__ import annotations

from typing import Any

from fastapi import Path

from tidegate.api.text import STORABLE_TEXT


def id_path(*, alias: str, description: str) -> Any:
    """A resource id in a v1 path (the platform's ids are 24 hex chars). Any other
    storable text up to that length finds nothing (404), exactly as a foreign id does."""
    return Path(
        alias=alias, min_length=1, max_length=24, pattern=STORABLE_TEXT, description=description
    )
