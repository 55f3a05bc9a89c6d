"""What each machine costguard keeps stopped saves the bill, as the sweeps find it: `worth#<day>` items, one
per region and sweep that priced them (`<time>#<region>`), each a map of instance id to USD an hour, gone
40 days after. A stop's own entry holds its price at the stop; these follow it as the fleet changes (a p4d
stopped at night, when a Savings Plan had room for most of it, saves its whole price once the day's work
fills the plan). The weekly digest reads a week of them (one Query a day) to count each stopped hour at
the price of that hour."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from costguard.core import formatting

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP = timedelta(days=40)


@dataclass(frozen=True)
class Worth:
    """The machines one sweep of one region found stopped by costguard, and what each saves an hour then."""

    at: datetime
    region: str
    usd_per_hour: Mapping[str, float]


class WorthLog:
    """A failed write raises (the sweep logs it and goes on: the stop's own price stands); a failed read
    raises (the digest says the savings were priced at the stops)."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def record(self, worth: Worth) -> None:
        """Written once per sweep and region: a sweep retried writes the same item again."""
        if not worth.usd_per_hour:
            return
        self.client.put_item(
            TableName=self.table,
            Item={
                "pk": {"S": _pk(worth.at.date())},
                "sk": {"S": f"{formatting.format_time(worth.at)}#{worth.region}"},
                "m": {"M": {iid: {"N": f"{usd:.4f}"} for iid, usd in sorted(worth.usd_per_hour.items())}},
                "expires_at": {"N": str(int((worth.at + KEEP).timestamp()))},
            },
        )

    def between(self, start: datetime, end: datetime) -> Iterator[Worth]:
        """Every record from `start` to `end`, day by day, oldest first."""
        paginator = self.client.get_paginator("query")
        day = start.date()
        while day <= end.date():
            for page in paginator.paginate(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": _pk(day)}},
            ):
                for item in page.get("Items", []):
                    if (found := _worth(item)) is not None and start <= found.at < end:
                        yield found
            day += timedelta(days=1)


def _pk(day: date) -> str:
    return f"worth#{day.isoformat()}"


def _worth(item: Mapping[str, object]) -> Worth | None:
    """One record, or None for an item that does not read as one (it is skipped, not fatal)."""
    try:
        at_text, _, region = str(item["sk"]["S"]).partition("#")  # type: ignore[index]
        at = formatting.parse_time(at_text)
        values = {iid: float(v["N"]) for iid, v in item["m"]["M"].items()}  # type: ignore[index]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if at is None or not region:
        return None
    return Worth(at, region, values)
