"""Where a long walk stopped, kept in the state table so the next run carries on (`cursor#<name>`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class WalkCursor:
    """Every event in [reached, began) has been walked by earlier runs."""

    began: datetime
    reached: datetime


class WalkCursors:
    """One walk's cursor (say, the owner backfill's in one region). A failed read or write raises: the
    run fails and is retried rather than walking from zero unseen, or forgetting how far it got."""

    def __init__(self, client: DynamoDBClient, table_name: str, name: str) -> None:
        self.client = client
        self.table = table_name
        self.key = {"pk": {"S": f"cursor#{name}"}, "sk": {"S": "cursor"}}

    def load(self) -> WalkCursor | None:
        item = self.client.get_item(TableName=self.table, Key=self.key).get("Item")
        if not item:
            return None
        return WalkCursor(datetime.fromisoformat(item["began"]["S"]), datetime.fromisoformat(item["reached"]["S"]))

    def save(self, cursor: WalkCursor | None) -> None:
        if cursor is None:
            self.client.delete_item(TableName=self.table, Key=self.key)
            return
        item = {**self.key, "began": {"S": cursor.began.isoformat()}, "reached": {"S": cursor.reached.isoformat()}}
        self.client.put_item(TableName=self.table, Item=item)
