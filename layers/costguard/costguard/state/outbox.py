"""The idle stopper's outbox: one record per machine per notice, kept in the state table as it happens,
so that a sweep killed anywhere loses no notice, repeats at most the one it was posting, and leaves no
ledger entry unwritten.

Each record is keyed by the effect it tells of, not by the attempt that made it: a warning by its
machine (one warning of a machine at a time), a stop and a withdrawn warning by the warning they act on
(`at`). A retry of a dead attempt writes the same record, never a second one.

- A record is leased before its notice is posted (`sending`, with the attempt's token, until the
  attempt's own deadline): only one attempt posts it, and one that finds a lease run out knows that
  the post may have happened and looks for it in Slack before posting again.
- Its delivery is recorded in one transaction with the ledger entry it proves (a warning, a withdrawn
  warning) or, for a stop, with the stop's entry as the record is removed: no delivered notice is
  without its entry.
- A stop's record is written (`pending`) before StopInstances: the next sweep finishes a stop whose
  sweep died, once AWS's own record of the machine proves that this stop happened. A working-hours
  start and a change of scale-in protection are kept the same way (`pending` before their call,
  removed with their ledger entry after it).
- A dry-run or notify-only report to the alerts channel is a notice like the others; delivered, its
  record stays until its day (or its warning) is over, so that the machine is reported once.
- A warning withdrawn whose message could not be changed to say so (its record or Slack refused the edit) is
  kept as `unsaid` (the message's channel and ts, and why), until a sweep that can write shows it: no message
  goes on promising a stop costguard no longer means to make.

One partition per region: each sweep reads it with one Query.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from costguard.core import formatting
from costguard.slack.blocks import Message
from costguard.slack.live import Live, Part, part_from_json, part_json
from costguard.state.entries import Entry, EntryKind
from costguard.state.ledger import Ledger, write_batch

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PENDING, SENDING, DELIVERED = "pending", "sending", "delivered"
WARN, STOP, CANCEL = "warn", "stop", "cancel"
# Reports to the alerts channel in dry-run and notify-only: a warning costguard would send, a stop it
# does not make.
WOULD_WARN, NOT_STOPPED = "would-warn", "not-stopped"
REPORTS = (WOULD_WARN, NOT_STOPPED)
# Effects told to nobody, kept from before their call until their ledger entry is written.
START, PROTECT, UNPROTECT = "start", "protect", "unprotect"
EFFECTS = (START, PROTECT, UNPROTECT)
# A withdrawn warning its message does not say yet: the change it still needs, kept until a sweep shows it.
UNSAID = "unsaid"
KEEP_FOR = timedelta(days=2)
TRANSACTION = 100  # TransactWriteItems' maximum actions a call


@dataclass(frozen=True)
class Notice:
    kind: str  # WARN, STOP or CANCEL; a report (REPORTS); an effect (EFFECTS)
    instance_id: str
    # A warning: when it went out; a stop or a withdrawn warning: the warning it acts on; a would-be
    # warning: its day; a start: the working hours' opening it is for; a protection change: the machine's
    # launch (ISO, UTC).
    at: str
    status: str = PENDING
    stop_after: str = ""  # a warning's stop time
    hibernate: bool = False
    owner: str = ""
    email: str = ""
    text: str = ""  # the notice's own message (for a stop: told once AWS took it)
    blocks: str = ""
    decided: str = ""  # when the stop (or the withdrawal) was decided: the ledger entry's time
    token: str = ""  # the attempt holding the record
    lease_until: int = 0  # epoch seconds; a delivered warning blocks another one until then
    to: str = ""  # where it is being (or was) posted: a user id, or a channel
    marker: str = ""  # the block_id of its part of the message, to find it in Slack's history
    ts: str = ""  # the message's ts, once delivered
    entry: str = ""  # the ledger entry its delivery proves (JSON)
    group: str = ""  # a protection change: the Auto Scaling group
    # a stop: its machine's live part (slack/live.py, JSON), told once AWS took the stop; a warning: its part as
    # posted, for a sweep that finds the post in Slack's history to keep the message (and change it later)
    part: str = ""
    stored_sk: str = ""  # the key it was read under (records from before keys by effect)

    @property
    def sk(self) -> str:
        if self.stored_sk:
            return self.stored_sk
        if self.kind == WARN:
            return f"{WARN}#{self.instance_id}"
        if self.kind == UNSAID:  # one per message and machine
            return f"{UNSAID}#{self.instance_id}#{self.to}#{self.ts}"
        return f"{self.kind}#{self.instance_id}#{self.at}"

    @property
    def time(self) -> datetime:
        moment = formatting.parse_time(self.at)
        assert moment is not None
        return moment

    @property
    def decided_time(self) -> datetime:
        return formatting.parse_time(self.decided) or self.time

    @property
    def message(self) -> Message:
        return Message(self.text, tuple(json.loads(self.blocks or "[]")))

    @property
    def ledger_entry(self) -> Entry | None:
        return entry_from_json(self.entry) if self.entry else None

    def with_message(self, message: Message) -> Notice:
        return replace(self, text=message.text, blocks=json.dumps(message.slack_blocks()))

    def with_part(self, part: Part) -> Notice:
        """A stop's notice: its machine's live part, and the message it is alone (kept for records from before)."""
        return replace(self.with_message(Live((part,)).message()), part=part_json(part))

    @property
    def live_part(self) -> Part | None:
        return part_from_json(self.part) if self.part else None

    def leased(self, token: str, until: datetime, status: str = SENDING) -> Notice:
        return replace(self, status=status, token=token, lease_until=int(until.timestamp()))

    def live(self, now: datetime) -> bool:
        """Held by an attempt that may still be running (or, delivered, still blocking a new warning)."""
        return self.lease_until >= int(now.timestamp())


FIELDS = {f.name for f in fields(Notice)} - {"stored_sk"}


class Outbox:
    def __init__(self, client: DynamoDBClient, table_name: str, region: str, ledger: Ledger | None = None) -> None:
        self.client = client
        self.table = table_name
        self.pk = f"outbox#{region}"
        self.ledger = ledger or Ledger(client, table_name)

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
                values["lease_until"] = int(values.get("lease_until") or 0)
                notice = Notice(**values, stored_sk=raw["sk"]["S"])
                if not notice.lease_until and notice.status == DELIVERED:  # kept as before leases: 40 minutes
                    notice = replace(notice, lease_until=int((notice.time + timedelta(minutes=40)).timestamp()))
                notices.append(notice)
        return notices

    def add(self, notices: Sequence[Notice]) -> None:
        """Pending notices (a stop's, before StopInstances), 25 a call."""
        write_batch(self.client, self.table, [{"PutRequest": {"Item": self._item(n)}} for n in notices])

    def lease(self, notices: Sequence[Notice], now: datetime) -> list[Notice]:
        """Take each notice's lease (already `leased` with this attempt's token) in one transaction per
        100: a notice another attempt holds (its lease running) or has told already is left out. The
        notices leased."""
        taken: list[Notice] = []
        for start in range(0, len(notices), TRANSACTION):
            chunk = list(notices[start : start + TRANSACTION])
            while chunk:
                try:
                    self.client.transact_write_items(TransactItems=[self._lease(n, now) for n in chunk])  # type: ignore[misc]
                except self.client.exceptions.TransactionCanceledException as exc:
                    refused = _refused(exc, len(chunk))
                    if not refused:
                        raise  # a conflict or a throttle, not a condition: the caller retries later
                    chunk = [n for k, n in enumerate(chunk) if k not in refused]
                    continue
                taken += chunk
                break
        return taken

    def delivered(self, notices: Sequence[Notice]) -> None:
        """Warnings (or withdrawn warnings) delivered, each with the ledger entry it proves, in one write."""
        actions = []
        for notice in notices:
            actions.append({"Put": {"TableName": self.table, "Item": self._item(notice)}})
            if (entry := notice.ledger_entry) is not None:
                actions.append({"Put": {"TableName": self.table, "Item": self.ledger.item(entry)}})
        self._transact(actions)

    def told(self, notices: Sequence[Notice]) -> None:
        """Stops told: each record removed as its ledger entry is written, in one write."""
        actions = []
        for notice in notices:
            actions.append({"Delete": {"TableName": self.table, "Key": self._key(notice)}})
            if (entry := notice.ledger_entry) is not None:
                actions.append({"Put": {"TableName": self.table, "Item": self.ledger.item(entry)}})
        self._transact(actions)

    def remove(self, notices: Sequence[Notice]) -> None:
        write_batch(self.client, self.table, [{"DeleteRequest": {"Key": self._key(n)}} for n in notices])

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        for start in range(0, len(actions), TRANSACTION):
            self.client.transact_write_items(TransactItems=actions[start : start + TRANSACTION])  # type: ignore[arg-type]

    def _lease(self, notice: Notice, now: datetime) -> dict[str, Any]:
        values: dict[str, Any] = {":now": {"N": str(int(now.timestamp()))}}
        if notice.kind == STOP:  # its pending record exists (written before the stop); ours, or run out
            condition = "attribute_exists(pk) AND (lease_until < :now OR #t = :token)"
            values[":token"] = {"S": notice.token}
            names = {"#t": "token"}
            return {
                "Put": {
                    "TableName": self.table,
                    "Item": self._item(notice),
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                }
            }
        return {
            "Put": {
                "TableName": self.table,
                "Item": self._item(notice),
                "ConditionExpression": "attribute_not_exists(pk) OR lease_until < :now",
                "ExpressionAttributeValues": values,
            }
        }

    def _key(self, notice: Notice) -> dict[str, Any]:
        return {"pk": {"S": self.pk}, "sk": {"S": notice.sk}}

    def _item(self, notice: Notice) -> dict[str, Any]:
        item: dict[str, Any] = {
            **self._key(notice),
            # Kept two days past the later of its time and its decision: a scale-in protection's time is its
            # member's launch, often days before.
            "expires_at": {"N": str(int((max(notice.time, notice.decided_time) + KEEP_FOR).timestamp()))},
        }
        for key, value in asdict(notice).items():
            if key == "stored_sk":
                continue
            if isinstance(value, bool):
                item[key] = {"BOOL": value}
            elif isinstance(value, int):
                item[key] = {"N": str(value)}
            elif value:
                item[key] = {"S": value}
        return item


def unsaid(instance_id: str, where: tuple[str, str], why: str, now: datetime) -> Notice:
    """A withdrawn warning its message at `where` (channel, ts) does not say yet, and why it was withdrawn:
    keyed by the message, so that a sweep that fails again to change it writes the same record."""
    channel, ts = where
    return Notice(UNSAID, instance_id, formatting.format_time(now), status=DELIVERED, to=channel, ts=ts, text=why)


def _refused(exc: Any, count: int) -> set[int]:
    """The positions a cancelled transaction names as failing their condition."""
    reasons = exc.response.get("CancellationReasons") or []
    return {k for k, r in enumerate(reasons[:count]) if (r or {}).get("Code") == "ConditionalCheckFailed"}


def entry_json(entry: Entry) -> str:
    values = asdict(entry)
    values["at"] = entry.at.isoformat()
    return json.dumps(values, separators=(",", ":"))


def entry_from_json(text: str) -> Entry:
    values = json.loads(text)
    values["at"] = datetime.fromisoformat(values["at"])
    values["kind"] = EntryKind(values["kind"])
    values["trail"] = tuple(t for t in values.get("trail") or () if isinstance(t, dict))
    return Entry(**values)
