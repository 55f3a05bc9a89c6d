"""Tag keys costguard owns. State that belongs to an instance lives in its tags, under `costguard:`.

One name for one thing: the template's IAM conditions, the code and the README use these keys.
"""

from __future__ import annotations

from datetime import UTC, datetime

PREFIX = "costguard:"

CREATED_BY = "costguard:created-by"
OWNER_SOURCE = "costguard:owner-source"

# Set by people to keep a machine from being stopped.
KEEP_UNTIL = "costguard:keep-until"
EXEMPT = "costguard:exempt"
KEPT_BY = "costguard:kept-by"  # who pressed a keep button

# The idle stopper's state, on the instance itself, visible in the console.
IDLE_WARNED_AT = "costguard:idle-warned-at"
STOP_AFTER = "costguard:stop-after"
STOPPED_AT = "costguard:stopped-at"
STOP_REASON = "costguard:stop-reason"
WARNING_TAGS = (IDLE_WARNED_AT, STOP_AFTER)

# Tag values are limited to 256 characters by EC2.
MAX_VALUE_LENGTH = 256


def clip(value: str) -> str:
    """EC2 refuses tag values over 256 characters; a long role-session ARN must not fail the call."""
    return value if len(value) <= MAX_VALUE_LENGTH else value[: MAX_VALUE_LENGTH - 1] + "…"


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 time from a tag; None if absent or unreadable. Times without a zone are UTC."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
