"""The ledger: what costguard did, kept in the state table (DynamoDB, on-demand, TTL).

Entries are partitioned by UTC day so that the weekly digest reads seven partitions.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, fields
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from costguard.core.errors import CostguardError
from costguard.state.entries import Entry, EntryKind

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BATCH = 25  # BatchWriteItem's maximum
MAX_BATCH_ATTEMPTS = 8

_ser = TypeSerializer()
_de = TypeDeserializer()


class StateTableBusy(CostguardError):
    """DynamoDB kept leaving part of a batch unprocessed (it throttles so); raised so the invocation is
    retried."""


class LedgerWriteError(StateTableBusy):
    """DynamoDB kept refusing part of a batch write."""


def backoff(attempt: int) -> None:
    """The pause before resending what a batch call left unprocessed: 50 ms, doubling, at most 2 s."""
    time.sleep(min(0.05 * 2**attempt, 2.0))


def write_batch(client: DynamoDBClient, table: str, requests: Sequence[Any]) -> None:
    """BatchWriteItem 25 requests a call, resending what DynamoDB leaves unprocessed (it throttles so)."""
    for start in range(0, len(requests), BATCH):
        batch: list[Any] = list(requests[start : start + BATCH])
        for attempt in range(MAX_BATCH_ATTEMPTS):
            response = client.batch_write_item(RequestItems={table: batch})
            batch = list((response.get("UnprocessedItems") or {}).get(table, []))
            if not batch:
                break
            backoff(attempt)  # throttled: back off, then resend the rest
        else:
            raise LedgerWriteError(f"{len(batch)} items still unprocessed after {MAX_BATCH_ATTEMPTS} tries")


class Ledger:
    def __init__(self, client: DynamoDBClient, table_name: str, ttl_days: int = 400) -> None:
        self.client = client
        self.table = table_name
        self.ttl = timedelta(days=ttl_days)

    def record(self, entry: Entry) -> None:
        self.record_many([entry])

    def record_many(self, entries: Sequence[Entry]) -> None:
        """Write entries 25 at a time (BatchWriteItem's limit). An entry's key is its time, instance and
        kind: writing the same entry twice (a retry) leaves one."""
        write_batch(self.client, self.table, [{"PutRequest": {"Item": self.item(e)}} for e in entries])

    def forget(self, entries: Sequence[Entry]) -> None:
        """Take back entries written ahead of an effect that then did not happen."""
        keys = [
            {"DeleteRequest": {"Key": {k: v for k, v in self.item(e).items() if k in ("pk", "sk")}}} for e in entries
        ]
        write_batch(self.client, self.table, keys)

    def item(self, entry: Entry) -> dict[str, Any]:
        """The entry as the table keeps it (for a write that carries it with other items)."""
        item: dict[str, Any] = {
            "pk": f"action#{entry.at:%Y-%m-%d}",
            "sk": f"{entry.at.isoformat()}#{entry.instance_id}#{entry.kind}",
            "expires_at": int((entry.at + self.ttl).timestamp()),
        }
        for key, value in asdict(entry).items():
            if key == "at":
                item[key] = value.isoformat()
            elif isinstance(value, float):
                item[key] = Decimal(str(round(value, 6)))
            elif key == "trail":
                if value:  # kept only where there is one: the other kinds' items stay as they were
                    item[key] = [dict(step) for step in value]
            else:
                item[key] = value
        return {k: _ser.serialize(v) for k, v in item.items()}

    def has(self, kind: str, instance_id: str, at: datetime) -> bool:
        """Whether an entry of this kind, machine and time is kept (a consistent read). Raises when the table
        would not answer."""
        key = {"pk": {"S": f"action#{at:%Y-%m-%d}"}, "sk": {"S": f"{at.isoformat()}#{instance_id}#{kind}"}}
        return "Item" in self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True)

    def decided(self, instance_id: str, at: datetime) -> list[Entry]:
        """The entries of one machine at one time (a decision's warning, stop or withdrawal), read consistently:
        where a message's *Why?* finds its decision's trail."""
        response = self.client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :sk)",
            ExpressionAttributeValues={
                ":pk": {"S": f"action#{at:%Y-%m-%d}"},
                ":sk": {"S": f"{at.isoformat()}#{instance_id}#"},
            },
            ConsistentRead=True,
        )
        return [self._entry(raw) for raw in response.get("Items", [])]

    def _entry(self, raw: dict[str, Any]) -> Entry:
        names = {f.name for f in fields(Entry)}
        item = {k: _de.deserialize(v) for k, v in raw.items() if k in names}
        item["at"] = datetime.fromisoformat(item["at"])
        for key in ("idle_hours", "hourly_saving", "gpu_hours", "list_hourly"):
            item[key] = float(item.get(key, 0))
        item["kind"] = EntryKind(item["kind"])
        item["trail"] = tuple(t for t in item.get("trail") or () if isinstance(t, dict))
        return Entry(**item)

    def entries_between(self, start: datetime, end: datetime) -> Iterator[Entry]:
        """Entries with start <= at < end, oldest first."""
        day = start.date()
        while day <= end.date():
            paginator = self.client.get_paginator("query")
            pages = paginator.paginate(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": f"action#{day:%Y-%m-%d}"}},
            )
            for page in pages:
                for raw in page.get("Items", []):
                    entry = self._entry(raw)
                    if start <= entry.at < end:
                        yield entry
            day += timedelta(days=1)
