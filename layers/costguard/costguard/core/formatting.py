"""How costguard writes times, money and durations, in tags and in Slack. Pure: no I/O."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 time from a tag; None if absent or unreadable. Times without a zone are UTC."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def usd(amount: float | None) -> str:
    if amount is None:
        return "unknown"
    return f"${amount:,.0f}" if abs(amount) >= 100 else f"${amount:,.2f}"


def signed(amount: float) -> str:
    return ("+" if amount >= 0 else "−") + usd(abs(amount))


def duration(minutes: int) -> str:
    hours, rest = divmod(max(0, minutes), 60)
    if hours and rest:
        return f"{hours} h {rest} min"
    return f"{hours} h" if hours else f"{rest} min"
