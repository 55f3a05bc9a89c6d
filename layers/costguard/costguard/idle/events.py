"""The idle stopper's three triggers, parsed. Pure: an event in, what to do out (or a validation error)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


def parse(event: Any) -> Sweep | AlarmFired | StateChanged | Skipped:
    if not isinstance(event, Mapping):
        raise EventValidationError(f"event is a {type(event).__name__}, not a JSON object")
    if event == SWEEP_INPUT:
        return Sweep()
    detail_type = event.get("detail-type")
    detail = event.get("detail")
    region = event.get("region")
    if detail_type not in (ALARM_DETAIL_TYPE, STATE_DETAIL_TYPE):
        raise EventValidationError(f"not an idle_stopper event: detail-type {detail_type!r}, keys {sorted(event)[:6]}")
    if not isinstance(detail, Mapping) or not isinstance(region, str):
        raise EventValidationError(f"{detail_type} event lacks detail or region")
    if detail_type == ALARM_DETAIL_TYPE:
        name = detail.get("alarmName")
        state = (detail.get("state") or {}).get("value")
        if not isinstance(name, str) or not isinstance(state, str):
            raise EventValidationError("alarm event lacks alarmName or state.value")
        if not name.startswith(ALARM_PREFIX):
            return Skipped(f"alarm {name} is not a costguard idle alarm")
        if state != "ALARM":
            return Skipped(f"alarm {name} went to {state}, not ALARM")
        return AlarmFired(name.removeprefix(ALARM_PREFIX), region)
    instance_id = detail.get("instance-id")
    state = detail.get("state")
    if not isinstance(instance_id, str) or not instance_id.startswith("i-") or not isinstance(state, str):
        raise EventValidationError("state-change event lacks instance-id or state")
    return StateChanged(instance_id, region, state)
