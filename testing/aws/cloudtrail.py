"""CloudTrail's LookupEvents (the 90-day event history), which moto does not implement, over a world's
records: the one CloudTrail stand-in, for the week (in process) and the demo's gap proxy (testing/aws_gaps.py,
on the wire), at least as strict as CloudTrail about what costguard sends.

Kept as CloudTrail keeps them: at most one lookup attribute a call (InvalidLookupAttributesException), its
key one of the API's; MaxResults 1 to 50 (50 unless asked); a StartTime after the EndTime refused
(InvalidTimeRangeException); events newest first, behind a NextToken; a record is its JSON string
(`CloudTrailEvent`) beside the fields LookupEvents lifts out of it. The world is a list of CloudTrail
records (dicts, eventTime in ISO 8601) per region, asked each call (the week's grows as it runs).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from testing.aws.errors import ApiError

PAGE_MAX = 50
ATTRIBUTE_KEYS = ("EventId", "EventName", "ReadOnly", "Username", "ResourceType", "ResourceName", "EventSource",
                  "AccessKeyId")  # fmt: skip
PARAMETERS = {"LookupAttributes", "StartTime", "EndTime", "EventCategory", "MaxResults", "NextToken"}


def record_time(record: Mapping[str, Any]) -> datetime:
    return datetime.fromisoformat(str(record["eventTime"]).replace("Z", "+00:00"))


def _moment(value: Any, default: datetime) -> datetime:
    if value is None:
        return default
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromtimestamp(float(value), UTC)  # the wire's epoch seconds


def resources(record: Mapping[str, Any]) -> list[str]:
    """The instances an EC2 record names: launched (responseElements) or asked for (requestParameters)."""
    out: list[str] = []
    for part in ("responseElements", "requestParameters"):
        items = ((record.get(part) or {}).get("instancesSet") or {}).get("items") or []
        out += [str(i["instanceId"]) for i in items if isinstance(i, dict) and i.get("instanceId")]
    return list(dict.fromkeys(out))


class CloudTrail:
    def __init__(self, records: Callable[[str], Sequence[Mapping[str, Any]]], region: str = "us-east-1") -> None:
        """`records(region)`: the region's CloudTrail records, any order."""
        self.records = records
        self.region = region
        self.calls = 0

    def lookup_events(self, params: Mapping[str, Any], region: str | None = None) -> dict[str, Any]:
        self.calls += 1
        unknown = sorted(set(params) - PARAMETERS)
        if unknown:
            raise ApiError("ValidationException", f"Unknown parameter: {unknown[0]}")
        attributes = list(params.get("LookupAttributes") or [])
        if len(attributes) > 1:
            raise ApiError("InvalidLookupAttributesException", "Only one lookup attribute is allowed.")
        for attribute in attributes:
            if attribute.get("AttributeKey") not in ATTRIBUTE_KEYS or not attribute.get("AttributeValue"):
                raise ApiError("InvalidLookupAttributesException", f"Invalid lookup attribute: {attribute!r}")
        start = _moment(params.get("StartTime"), datetime.min.replace(tzinfo=UTC))
        end = _moment(params.get("EndTime"), datetime.max.replace(tzinfo=UTC))
        if start > end:
            raise ApiError("InvalidTimeRangeException", "StartTime must be before EndTime.")
        size = int(params.get("MaxResults") or PAGE_MAX)
        if not 1 <= size <= PAGE_MAX:
            raise ApiError("InvalidMaxResultsException", f"MaxResults {size}: 1 to {PAGE_MAX}")
        token = str(params.get("NextToken") or "0")
        if not token.isdigit():
            raise ApiError("InvalidNextTokenException", f"Invalid NextToken: {token}")
        events = [
            r
            for r in self.records(region or self.region)
            if start <= record_time(r) <= end and all(_matches(r, a) for a in attributes)
        ]
        events.sort(key=record_time, reverse=True)  # newest first, as CloudTrail returns them
        first = int(token)
        answer: dict[str, Any] = {"Events": [entry(r) for r in events[first : first + size]]}
        if first + size < len(events):
            answer["NextToken"] = str(first + size)
        return answer


def _matches(record: Mapping[str, Any], attribute: Mapping[str, str]) -> bool:
    key, value = attribute["AttributeKey"], attribute["AttributeValue"]
    if key == "EventName":
        return bool(record.get("eventName") == value)
    if key == "ResourceName":
        return value in resources(record)
    if key == "EventSource":
        return bool(record.get("eventSource") == value)
    if key == "EventId":
        return bool(record.get("eventID") == value)
    if key == "ReadOnly":
        return str(bool(record.get("readOnly"))).lower() == value
    if key == "Username":
        return _username(record) == value
    return False  # ResourceType, AccessKeyId: the worlds' records carry none


def _username(record: Mapping[str, Any]) -> str:
    identity = record.get("userIdentity") or {}
    return str(identity.get("userName") or str(identity.get("arn", "")).rsplit("/", 1)[-1])


def entry(record: Mapping[str, Any]) -> dict[str, Any]:
    """One LookupEvents event (EventTime a datetime, as boto3 parses it)."""
    return {
        "EventId": record.get("eventID", ""),
        "EventName": record.get("eventName", ""),
        "ReadOnly": "true" if record.get("readOnly") else "false",
        "EventTime": record_time(record),
        "EventSource": record.get("eventSource", ""),
        "Username": _username(record),
        "Resources": [{"ResourceType": "AWS::EC2::Instance", "ResourceName": i} for i in resources(record)],
        "CloudTrailEvent": json.dumps(record),
    }
