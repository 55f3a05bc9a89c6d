"""CloudTrail adapter: the 90-day event history, a page at a time. Takes its client.

LookupEvents allows one lookup attribute per call and 2 calls per second per region (the client's
adaptive retries pace it); a page holds at most 50 events, newest first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from costguard.aws.clients import utc_time
from costguard.core import formatting
from costguard.core.scarcity import CAPACITY_ERRORS, FailedStart

if TYPE_CHECKING:
    from mypy_boto3_cloudtrail import CloudTrailClient

EVENT_HISTORY = timedelta(days=90)
PAGE_SIZE = 50  # LookupEvents' maximum
CAPACITY_EVENTS = ("StartInstances", "RunInstances")
CAPACITY_PAGES = 20  # per event name and read: 1,000 launches, about 10 s at LookupEvents' 2 calls a second


class CloudTrail:
    def __init__(self, client: CloudTrailClient) -> None:
        self.client = client

    def pages(
        self, attribute: tuple[str, str], start: datetime, end: datetime
    ) -> Iterator[tuple[Sequence[Mapping[str, Any]], bool]]:
        """Each page's events, and whether another page follows."""
        key, value = attribute
        paginator = self.client.get_paginator("lookup_events")
        for page in paginator.paginate(
            LookupAttributes=[{"AttributeKey": key, "AttributeValue": value}],  # type: ignore[typeddict-item]
            StartTime=start,
            EndTime=end,
            PaginationConfig={"PageSize": PAGE_SIZE},
        ):
            yield page.get("Events", []), bool(page.get("NextToken"))

    def refused_for_capacity(
        self, region: str, start: datetime, end: datetime, *, most_pages: int = CAPACITY_PAGES
    ) -> tuple[list[FailedStart], bool]:
        """The launches and starts EC2 refused for capacity between `start` and `end`, and whether every page
        was read (the newest come first: a walk cut short misses the oldest)."""
        out: list[FailedStart] = []
        whole = True
        for name in CAPACITY_EVENTS:
            for read, (events, more) in enumerate(self.pages(("EventName", name), start, end), start=1):
                out += capacity_failures(events, region)
                if more and read >= most_pages:
                    whole = False
                    break
        return out, whole


def capacity_failures(events: Sequence[Mapping[str, object]], region: str) -> list[FailedStart]:
    """The launches and starts in a page of LookupEvents that EC2 refused for capacity. A StartInstances
    names its instances, not their type: those come back with the instance id alone, for the caller to
    describe."""
    out: list[FailedStart] = []
    for event in events:
        try:
            record = json.loads(str(event.get("CloudTrailEvent") or "{}"))
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("errorCode") not in CAPACITY_ERRORS:
            continue
        params = record.get("requestParameters") or {}
        at = _event_time(record.get("eventTime"), event.get("EventTime"))
        if at is None or not isinstance(params, dict):
            continue
        if record.get("eventName") == "RunInstances":
            placement = params.get("placement") or {}
            zone = placement.get("availabilityZone", "") if isinstance(placement, dict) else ""
            out.append(
                FailedStart(str(params.get("instanceType") or ""), str(zone or ""), at, "CloudTrail", region=region)
            )
        elif record.get("eventName") == "StartInstances":
            wrapped = params.get("instancesSet")
            items = (wrapped.get("items") if isinstance(wrapped, dict) else None) or []
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and item.get("instanceId"):
                    out.append(
                        FailedStart("", "", at, "CloudTrail", instance_id=str(item["instanceId"]), region=region)
                    )
    return out


def _event_time(text: Any, fallback: Any) -> datetime | None:
    """When the event happened: LookupEvents' own EventTime, else the record's eventTime; None if unreadable."""
    return utc_time(fallback) if isinstance(fallback, datetime) else formatting.parse_time(str(text))
