"""When each machine was started and stopped (EC2's state changes, as the idle stopper receives them):
`history#<instance>` items, the last 60 changes, kept 30 days after the last. The idle warning reads
them to offer working hours to a machine that keeps regular ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard.core.observability import logger
from costguard.state.batches import read_batch
from costguard.state.ledger import StateTableBusy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP = timedelta(days=30)
LIMIT = 60


class MachineHistory:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def record(self, instance_id: str, state: str, at: datetime) -> None:
        """One state change; the oldest are let go beyond LIMIT. Raises on a failed write (the event is
        retried: a change recorded twice reads as one, the same day's start and stop stay the same)."""
        answer = self.client.update_item(
            TableName=self.table,
            Key=_key(instance_id),
            UpdateExpression="SET changes = list_append(if_not_exists(changes, :none), :one), expires_at = :until",
            ExpressionAttributeValues={
                ":none": {"L": []},
                ":one": {"L": [{"S": f"{at.isoformat()}|{state}"}]},
                ":until": {"N": str(int((at + KEEP).timestamp()))},
            },
            ReturnValues="UPDATED_NEW",
        )
        changes = answer.get("Attributes", {}).get("changes", {}).get("L", [])
        if len(changes) > LIMIT:
            kept = changes[-LIMIT // 2 :]
            self.client.update_item(
                TableName=self.table,
                Key=_key(instance_id),
                UpdateExpression="SET changes = :kept",
                ExpressionAttributeValues={":kept": {"L": kept}},
            )

    def changes_of(self, instance_ids: Sequence[str]) -> dict[str, list[tuple[datetime, str]]]:
        """The recorded changes of many machines, 100 a call; [] for those without any, and for all when the
        table cannot be read (their starts only sharpen what their metrics show)."""
        out: dict[str, list[tuple[datetime, str]]] = {i: [] for i in instance_ids}
        try:
            for item in read_batch(self.client, self.table, [_key(i) for i in dict.fromkeys(instance_ids)]):
                out[str(item["pk"]["S"]).removeprefix("history#")] = _changes(item)
        except (ClientError, BotoCoreError, StateTableBusy) as exc:
            logger.warning("machine histories unreadable", machines=len(instance_ids), error=str(exc)[:200])
        return out

    def changes(self, instance_id: str) -> list[tuple[datetime, str]]:
        """The recorded changes, oldest first; [] when none, or when the table cannot be read (a missing
        history only means no working hours are offered)."""
        try:
            item = self.client.get_item(TableName=self.table, Key=_key(instance_id)).get("Item") or {}
        except (ClientError, BotoCoreError) as exc:
            logger.warning("machine history unreadable", instance_id=instance_id, error=str(exc)[:200])
            return []
        return _changes(item)


def _changes(item: Mapping[str, Any]) -> list[tuple[datetime, str]]:
    out = []
    for value in item.get("changes", {}).get("L", []):
        at, _, state = str(value.get("S", "")).partition("|")
        try:
            out.append((datetime.fromisoformat(at), state))
        except ValueError:
            continue
    return sorted(out)


def _key(instance_id: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"history#{instance_id}"}, "sk": {"S": "history"}}
