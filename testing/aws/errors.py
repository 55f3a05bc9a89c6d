"""The error a stand-in answers with: AWS's error code, message and HTTP status (and any extra fields AWS
sends with it, such as a cancelled transaction's CancellationReasons)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ApiError(Exception):
    def __init__(self, code: str, message: str, status: int = 400, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.status, self.extra = code, message, status, dict(extra or {})


def unsupported(what: str) -> ApiError:
    """A request the stand-in does not understand: refused loudly, never answered loosely."""
    return ApiError("UnsupportedByStandIn", f"the stand-in does not implement {what}")
