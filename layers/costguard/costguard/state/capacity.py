"""The starts EC2 refused for want of capacity in a region, kept for the scarcity rule: `capacity#<region>`
items, one per failure (from CloudTrail, or from costguard's own starts), each gone 15 days after it, and
one `read` item saying until when CloudTrail was read. One Query reads them all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from costguard.core.scarcity import SCARCE_FOR, FailedStart
from costguard.state.ledger import write_batch

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP = SCARCE_FOR + timedelta(days=1)
READ = "read"


@dataclass(frozen=True)
class CapacityRecord:
    """The failures kept for a region, and until when CloudTrail was read (None: never)."""

    failures: tuple[FailedStart, ...]
    read_until: datetime | None
    read_from: datetime | None = None  # CloudTrail was read from here to `read_until`


class CapacityLog:
    """A failed read or write raises: the caller decides what missing evidence means."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def load(self, region: str) -> CapacityRecord:
        failures: list[FailedStart] = []
        read_until = read_from = None
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": _pk(region)}},
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                if item["sk"]["S"] == READ:
                    read_until, read_from = _time(item, "until"), _time(item, "from")
                elif (failure := _failure(item, region)) is not None:
                    failures.append(failure)
        return CapacityRecord(tuple(failures), read_until, read_from if read_until is not None else None)

    def add(
        self,
        region: str,
        failures: Sequence[FailedStart],
        *,
        read_until: datetime | None = None,
        read_from: datetime | None = None,
    ) -> None:
        """The failures kept (the same failure written twice is one item), then, if given, the span CloudTrail
        was read over: written last, so a write that fails midway is read again next time."""
        write_batch(
            self.client, self.table, [{"PutRequest": {"Item": self._item(region, f)}} for f in dict.fromkeys(failures)]
        )
        if read_until is not None:
            self.client.put_item(
                TableName=self.table,
                Item={
                    "pk": {"S": _pk(region)},
                    "sk": {"S": READ},
                    "until": {"S": read_until.isoformat()},
                    "from": {"S": (read_from or read_until).isoformat()},
                },
            )

    def _item(self, region: str, failure: FailedStart) -> dict[str, Any]:
        key = f"{failure.at.isoformat()}#{failure.source}#{failure.instance_type}#{failure.zone}#{failure.instance_id}"
        return {
            "pk": {"S": _pk(region)},
            "sk": {"S": f"fail#{key}"},
            "instance_type": {"S": failure.instance_type},
            "zone": {"S": failure.zone},
            "at": {"S": failure.at.isoformat()},
            "source": {"S": failure.source},
            "instance_id": {"S": failure.instance_id},
            "expires_at": {"N": str(int((failure.at + KEEP).timestamp()))},
        }


def _pk(region: str) -> str:
    return f"capacity#{region}"


def _time(item: dict[str, Any], name: str) -> datetime | None:
    """When CloudTrail was read until (or from); None (read it again) where the item is not costguard's."""
    try:
        return datetime.fromisoformat(item[name]["S"])
    except (KeyError, TypeError, ValueError):
        return None


def _failure(item: dict[str, Any], region: str) -> FailedStart | None:
    try:
        return FailedStart(
            instance_type=item["instance_type"]["S"],
            zone=item["zone"]["S"],
            at=datetime.fromisoformat(item["at"]["S"]),
            source=item["source"]["S"],
            instance_id=item["instance_id"]["S"],
            region=region,
        )
    except (KeyError, ValueError):
        return None  # not an item of costguard's: no evidence
