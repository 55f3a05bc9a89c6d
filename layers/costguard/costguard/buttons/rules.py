"""When a keep button's protection ends, in the team's own time. Pure: no I/O."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from costguard.slack.buttons import Button

KEEP_HOURS = 2
MORNING_HOUR = 9


def keep_until(pressed: Button, clicked_at: datetime, zone: ZoneInfo) -> datetime:
    """When a keep button's protection ends: 2 h from now, tomorrow 09:00 or next Monday 09:00, local time."""
    if pressed is Button.KEEP_2H:
        return clicked_at + timedelta(hours=KEEP_HOURS)
    local = clicked_at.astimezone(zone)
    days = 1 if pressed is Button.KEEP_TOMORROW else (7 - local.weekday()) or 7
    morning = (local + timedelta(days=days)).replace(hour=MORNING_HOUR, minute=0, second=0, microsecond=0)
    return morning.astimezone(clicked_at.tzinfo)
