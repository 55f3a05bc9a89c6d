"""The idle stopper's outbox: what it is about to tell, and what it has told, kept in the state table
as it happens, so that a sweep killed half-way loses no notice and repeats none it had recorded.

- A warning, once delivered, is recorded at once (one write): the next sweep finds the record, writes
  the warning tags the dead sweep had not written yet, and does not warn again.
- A stop notice is written (pending) before the StopInstances call and removed once delivered. A sweep
  that finds a pending stop notice older than any sweep can live looks at the machine: stopped, it
  records the stop (tags, ledger) and delivers the notice; still running, the notice is dropped,
  since no stop happened to be told of.

One partition per region: each sweep reads it with one Query.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from costguard.core import formatting
from costguard.slack.blocks import Message
from costguard.state.ledger import write_batch

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PENDING, DELIVERED = "pending", "delivered"
WARN, STOP = "warn", "stop"
KEEP_FOR = timedelta(days=2)


@dataclass(frozen=True)
class Notice:
    kind: str  # WARN or STOP
    instance_id: str
    at: str  # when the warning went out or the stop was decided, ISO 8601 UTC
    status: str = PENDING
    stop_after: str = ""  # a warning's stop time
    hibernate: bool = False
    owner: str = ""
    email: str = ""
    text: str = ""  # a pending stop notice's message
    blocks: str = ""

    @property
    def sk(self) -> str:
        return f"{self.kind}#{self.instance_id}#{self.at}"

    @property
    def time(self) -> datetime:
        moment = formatting.parse_time(self.at)
        assert moment is not None
        return moment

    @property
    def message(self) -> Message:
        return Message(self.text, tuple(json.loads(self.blocks or "[]")))

    def with_message(self, message: Message) -> Notice:
        values = {**asdict(self), "text": message.text, "blocks": json.dumps(message.slack_blocks())}
        return Notice(**values)


FIELDS = {f.name for f in fields(Notice)}


class Outbox:
    def __init__(self, client: DynamoDBClient, table_name: str, region: str) -> None:
        self.client = client
        self.table = table_name
        self.pk = f"outbox#{region}"

    def read(self) -> list[Notice]:
        notices = []
        pages = self.client.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": self.pk}},
            ConsistentRead=True,
        )
        for page in pages:
            for raw in page.get("Items", []):
                values: dict[str, Any] = {k: next(iter(v.values())) for k, v in raw.items() if k in FIELDS}
                values["hibernate"] = values.get("hibernate") is True
                notices.append(Notice(**values))
        return notices

    def add(self, notices: list[Notice]) -> None:
        """Pending notices, 25 a call."""
        write_batch(self.client, self.table, [{"PutRequest": {"Item": self._item(n)}} for n in notices])

    def delivered(self, notice: Notice) -> None:
        """One notice, right after its delivery."""
        self.client.put_item(TableName=self.table, Item=self._item(Notice(**{**asdict(notice), "status": DELIVERED})))

    def remove(self, notices: list[Notice]) -> None:
        keys = [{"DeleteRequest": {"Key": {"pk": {"S": self.pk}, "sk": {"S": n.sk}}}} for n in notices]
        write_batch(self.client, self.table, keys)

    def _item(self, notice: Notice) -> dict[str, Any]:
        item: dict[str, Any] = {
            "pk": {"S": self.pk},
            "sk": {"S": notice.sk},
            "expires_at": {"N": str(int((notice.time + KEEP_FOR).timestamp()))},
        }
        for key, value in asdict(notice).items():
            if isinstance(value, bool):
                item[key] = {"BOOL": value}
            elif value:
                item[key] = {"S": value}
        return item
