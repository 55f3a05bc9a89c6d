"""CloudTrail RunInstances records, parsed into LaunchEvents. Pure: no I/O.

The same record arrives two ways: as the `detail` of an EventBridge "AWS API Call via CloudTrail"
event (real time, the region of the call only) and as the `CloudTrailEvent` JSON string of a
CloudTrail LookupEvents result (the backfill, 90 days of history).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from costguard.core.errors import EventValidationError
from costguard.core.records import Skipped
from costguard.owners.rules import Identity

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
    if not isinstance(event, Mapping):
        raise EventValidationError(f"event is a {type(event).__name__}, not a JSON object")
    detail_type = event.get("detail-type")
    if detail_type != EVENTBRIDGE_DETAIL_TYPE:
        raise EventValidationError(f"detail-type {detail_type!r} is not {EVENTBRIDGE_DETAIL_TYPE!r}")
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        raise EventValidationError("event has no 'detail' object")
    return parse_record(detail)


def parse_record(record: Mapping[str, Any]) -> LaunchEvent | Skipped:
    """A CloudTrail record (the EventBridge detail, or a LookupEvents CloudTrailEvent)."""
    name = record.get("eventName")
    source = record.get("eventSource")
    if not isinstance(name, str) or not isinstance(source, str):
        raise EventValidationError("CloudTrail record lacks eventName or eventSource")
    if source != "ec2.amazonaws.com" or name != "RunInstances":
        return Skipped(f"{source} {name} is not an EC2 RunInstances call")
    if record.get("errorCode"):
        return Skipped(f"RunInstances failed with {record.get('errorCode')}: nothing was launched")

    identity = parse_identity(record.get("userIdentity"))
    region = _required_str(record, "awsRegion")
    event_time = _parse_time(_required_str(record, "eventTime"))
    instance_ids = _instance_ids(record.get("responseElements"))
    if not instance_ids:
        raise EventValidationError("successful RunInstances record names no instance in responseElements")
    return LaunchEvent(
        event_id=str(record.get("eventID", "")),
        event_time=event_time,
        region=region,
        identity=identity,
        instance_ids=instance_ids,
    )


def parse_lookup_event(result: Mapping[str, Any]) -> LaunchEvent | Skipped:
    """One entry of LookupEvents' `Events`; its `Resources` list backs up a truncated record."""
    raw = result.get("CloudTrailEvent")
    try:
        record = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError as exc:
        raise EventValidationError(f"CloudTrailEvent is not JSON: {exc}") from exc
    if not isinstance(record, Mapping):
        raise EventValidationError("LookupEvents result has no CloudTrailEvent record")
    if not _instance_ids(record.get("responseElements")):
        # CloudTrail drops responseElements from very large records; the Resources list still names them.
        ids = [
            r["ResourceName"]
            for r in result.get("Resources") or []
            if r.get("ResourceType") == "AWS::EC2::Instance" and str(r.get("ResourceName", "")).startswith("i-")
        ]
        if ids:
            record = {**record, "responseElements": {"instancesSet": {"items": [{"instanceId": i} for i in ids]}}}
    return parse_record(record)


def parse_identity(raw: Any) -> Identity:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        raise EventValidationError("CloudTrail record has no userIdentity.type")
    issuer = ((raw.get("sessionContext") or {}).get("sessionIssuer")) or {}
    return Identity(
        type=raw["type"],
        arn=str(raw.get("arn") or ""),
        user_name=str(raw.get("userName") or ""),
        session_issuer_arn=str(issuer.get("arn") or ""),
        session_issuer_name=str(issuer.get("userName") or ""),
        invoked_by=str(raw.get("invokedBy") or ""),
    )


def _instance_ids(response: Any) -> tuple[str, ...]:
    if not isinstance(response, Mapping):
        return ()
    items = (response.get("instancesSet") or {}).get("items") or []
    return tuple(str(i["instanceId"]) for i in items if isinstance(i, Mapping) and i.get("instanceId"))


def _required_str(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value:
        raise EventValidationError(f"CloudTrail record lacks {key}")
    return value


def _parse_time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise EventValidationError(f"eventTime {value!r} is not an ISO 8601 time") from exc
