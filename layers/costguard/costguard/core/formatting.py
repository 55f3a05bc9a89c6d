"""How costguard writes times, money and durations, in tags and in Slack. Pure: no I/O."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


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


def zone_of(name: str | tzinfo | None, default: str = "UTC") -> ZoneInfo:
    """An IANA zone by name (a person's Slack zone, the TeamTimezone setting); `default` when empty or unknown."""
    if isinstance(name, ZoneInfo):
        return name
    for candidate in (str(name or "").strip(), default, "UTC"):
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long for a file's
            continue
    return ZoneInfo("UTC")  # pragma: no cover (UTC always exists with tzdata)


def local_text(value: datetime, zone: str | tzinfo | None = "UTC", *, clock: bool = False) -> str:
    """A time as a person in `zone` reads it, naming the zone: "Sat 21 Nov 17:08 CET" (`clock`: "17:08 CET").
    Slack shows it where it cannot show the reader's own time (a notification, an old client)."""
    local = value.astimezone(zone_of(zone))
    said = f"{local:%H:%M}" if clock else f"{local:%a %d %b %H:%M}"
    return f"{said} {local.tzname() or zone_of(zone).key}"


def place(zone: str | tzinfo | None) -> str:
    """What a zone is called in a sentence: its city ("Paris", "New York"), or UTC."""
    key = zone_of(zone).key
    return "UTC" if key in ("UTC", "Etc/UTC") else key.rsplit("/", 1)[-1].replace("_", " ")


def usd(amount: float | None) -> str:
    if amount is None:
        return "unknown"
    return f"${amount:,.0f}" if abs(amount) >= 100 else f"${amount:,.2f}"


def signed(amount: float) -> str:
    return ("+" if amount >= 0 else "−") + usd(abs(amount))


def plural(count: int, noun: str, many: str | None = None) -> str:
    """A count with its noun as a reader says it: "1 machine", "0 machines", "3 Studio apps"; `many` where an
    "s" is not the plural ("1 reply", "2 replies"). costguard never writes a noun with a bracketed "s"."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def duration(minutes: int) -> str:
    hours, rest = divmod(max(0, minutes), 60)
    if hours and rest:
        return f"{hours} h {rest} min"
    return f"{hours} h" if hours else f"{rest} min"
