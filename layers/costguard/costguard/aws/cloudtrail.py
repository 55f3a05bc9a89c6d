"""CloudTrail adapter: the 90-day event history, a page at a time. Takes its client.

LookupEvents allows one lookup attribute per call and 2 calls per second per region (the client's
adaptive retries pace it); a page holds at most 50 events, newest first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_cloudtrail import CloudTrailClient

EVENT_HISTORY = timedelta(days=90)
PAGE_SIZE = 50  # LookupEvents' maximum


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
