"""What the pipeline routers share: their error responses and path parameters."""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import Path

from tidegate.api.error_models import V3_ERRORS, V3Error, error_response

ERRORS: Final[dict[int | str, dict[str, Any]]] = {
    **V3_ERRORS,
    409: error_response(V3Error, "Conflict with the current state"),
}

ID_PATTERN: Final = r"^[0-9A-Za-z_-]+$"
PipelineIdPath = Annotated[
    str,
    Path(min_length=1, max_length=36, pattern=ID_PATTERN, description="The pipeline's id"),
]
NodeIdPath = Annotated[
    str, Path(min_length=1, max_length=36, pattern=ID_PATTERN, description="The node's id")
]
