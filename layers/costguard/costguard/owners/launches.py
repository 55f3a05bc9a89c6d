"""CloudTrail RunInstances records, parsed into LaunchEvents. Pure: no I/O.

The same record arrives two ways: as the `detail` of an EventBridge "AWS API Call via CloudTrail"
event (real time, the region of the call only) and as the `CloudTrailEvent` JSON string of a
CloudTrail LookupEvents result (the backfill, 90 days of history).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from costguard.core import shapes
from costguard.core.errors import EventValidationError
from costguard.core.ownership import Identity, lookup_record, parse_identity
from costguard.core.records import Skipped

EVENTBRIDGE_DETAIL_TYPE = "AWS API Call via CloudTrail"


@dataclass(frozen=True)
class LaunchEvent:
    """A successful RunInstances call: who made it, when, and which instances it created."""

    event_id: str
    event_time: datetime
    region: str
    identity: Identity
    instance_ids: tuple[str, ...]


def parse_eventbridge_event(event: Any) -> LaunchEvent | Skipped:
    """An EventBridge event → a LaunchEvent, a Skipped with a reason, or EventValidationError."""
    event = shapes.obj(event, "event")
    detail_type = event.get("detail-type")
    if detail_type != EVENTBRIDGE_DETAIL_TYPE:
        raise EventValidationError(f"detail-type {str(detail_type)[:60]!r} is not {EVENTBRIDGE_DETAIL_TYPE!r}")
    return parse_record(shapes.obj(event.get("detail"), "detail"))


def parse_record(record: Mapping[str, Any]) -> LaunchEvent | Skipped:
    """A CloudTrail record (the EventBridge detail, or a LookupEvents CloudTrailEvent)."""
    name = shapes.text(record, "eventName", "record")
    source = shapes.text(record, "eventSource", "record")
    if source != "ec2.amazonaws.com" or name != "RunInstances":
        return Skipped(f"{source[:60]} {name[:60]} is not an EC2 RunInstances call")
    if record.get("errorCode"):
        return Skipped(f"RunInstances failed with {str(record.get('errorCode'))[:60]}: nothing was launched")

    identity = parse_identity(record.get("userIdentity"))
    region = shapes.region(record.get("awsRegion"), "record.awsRegion")
    event_time = _parse_time(shapes.text(record, "eventTime", "record", limit=40))
    instance_ids = _instance_ids(record.get("responseElements"))
    if not instance_ids:
        raise EventValidationError("successful RunInstances record names no instance in responseElements")
    return LaunchEvent(
        event_id=shapes.optional_text(record, "eventID", "record", limit=100),
        event_time=event_time,
        region=region,
        identity=identity,
        instance_ids=instance_ids,
    )


def parse_lookup_event(result: Mapping[str, Any]) -> LaunchEvent | Skipped:
    """One entry of LookupEvents' `Events`; its `Resources` list backs up a truncated record."""
    record = lookup_record(result)
    if not _instance_ids(record.get("responseElements")):
        # CloudTrail drops responseElements from very large records; the Resources list still names them.
        ids = [
            r["ResourceName"]
            for r in shapes.items(result.get("Resources"), "Resources")
            if isinstance(r, Mapping)
            and r.get("ResourceType") == "AWS::EC2::Instance"
            and isinstance(r.get("ResourceName"), str)
            and shapes.INSTANCE_ID.match(r["ResourceName"])
        ]
        if ids:
            record = {**record, "responseElements": {"instancesSet": {"items": [{"instanceId": i} for i in ids]}}}
    return parse_record(record)


def _instance_ids(response: Any) -> tuple[str, ...]:
    """The launched instances' ids; a response that is there but malformed is refused, not skipped."""
    if response is None:
        return ()
    where = "responseElements.instancesSet"
    instances = shapes.optional_obj(shapes.obj(response, "responseElements"), "instancesSet", "responseElements")
    found = shapes.items(instances.get("items"), f"{where}.items")
    return tuple(
        shapes.instance_id(shapes.obj(i, f"{where}.items[]").get("instanceId"), f"{where}.items[].instanceId")
        for i in found
    )


def _parse_time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise EventValidationError(f"eventTime {value[:40]!r} is not an ISO 8601 time") from exc
