"""The idle stopper's three triggers, parsed. Pure: an event in, what to do out (or a validation error)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from costguard.core import shapes
from costguard.core.errors import EventValidationError
from costguard.core.names import ALARM_PREFIX
from costguard.core.records import Skipped

SWEEP_INPUT = {"costguard": "sweep"}
ALARM_DETAIL_TYPE = "CloudWatch Alarm State Change"
STATE_DETAIL_TYPE = "EC2 Instance State-change Notification"


@dataclass(frozen=True)
class Sweep:
    pass


@dataclass(frozen=True)
class AlarmFired:
    instance_id: str
    region: str


@dataclass(frozen=True)
class StateChanged:
    instance_id: str
    region: str
    state: str
    at: datetime | None = None  # when EC2 says it changed (the event's time)


Event = Sweep | AlarmFired | StateChanged | Skipped


def parse(event: Any) -> Event:
    event = shapes.obj(event, "event")
    if event == SWEEP_INPUT:
        return Sweep()
    detail_type = event.get("detail-type")
    if detail_type not in (ALARM_DETAIL_TYPE, STATE_DETAIL_TYPE):
        keys = sorted(str(k)[:30] for k in event)[:6]
        raise EventValidationError(f"not an idle_stopper event: detail-type {str(detail_type)[:60]!r}, keys {keys}")
    detail = shapes.obj(event.get("detail"), "detail")
    region = shapes.region(event.get("region"), "region")
    if detail_type == ALARM_DETAIL_TYPE:
        name = shapes.text(detail, "alarmName", "detail", limit=255)
        state = shapes.text(shapes.obj(detail.get("state"), "detail.state"), "value", "detail.state", limit=40)
        if not name.startswith(ALARM_PREFIX):
            return Skipped(f"alarm {name[:80]} is not a costguard idle alarm")
        if state != "ALARM":
            return Skipped(f"alarm {name} went to {state}, not ALARM")
        return AlarmFired(shapes.instance_id(name.removeprefix(ALARM_PREFIX), "the alarm's instance"), region)
    instance_id = shapes.instance_id(detail.get("instance-id"), "detail.instance-id")
    state = shapes.text(detail, "state", "detail", limit=40)
    return StateChanged(instance_id, region, state, _time(shapes.optional_text(event, "time", "event", limit=40)))


def _time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def governed(what: Sweep | AlarmFired | StateChanged | Skipped, regions: Sequence[str]) -> Event:
    """An event about one machine is costguard's only in a region it governs."""
    if isinstance(what, AlarmFired | StateChanged) and what.region not in regions:
        return Skipped(f"region {what.region} is not governed")
    return what
