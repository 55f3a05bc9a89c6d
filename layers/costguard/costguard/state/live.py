"""Live messages kept, so that a click or a later event changes one machine's part of a message in place.

Two kinds of item in the state table, kept two weeks:

- `live#<channel>#<ts>` (sk `live`): the message's parts as last drawn (slack/live.py, JSON) and a version;
- `live-of#<key>` (sk `live-of`): where the latest live message about a machine (or a SageMaker resource)
  is: its channel and ts.

A change reads the message, changes one part, and writes it back only if nobody changed it meanwhile (its
version); then it edits the message in Slack (chat.update). Two changes may reach Slack in either order:
each, after its edit, reads the version again and, if another change came after its own, shows the newest,
so Slack ends on the last one.

An edit is presentation. It comes after the effect it tells of (a stop, a keep), never before, and never
blocks or undoes it: a change that fails is logged and counted (`MessageUpdatesFailed`), and the next
change of the message draws every part again. A message is marked stale (`live-stale`, one item: the
messages' channel#ts, each with the mark of the change that set it) BEFORE its record changes, and the mark is
cleared once Slack took the edit (or there was nothing to change, or Slack refuses the message for good:
deleted, its channel archived, and it is let go). So a message whose edit Slack did not take (an outage, a rate
limit past its retries) or never got (the invocation ended between the record and the edit, at Lambda's
timeout) stays marked, and each sweep shows the stale ones again as their record says (`reshow`): Slack comes
back to the current state even where nothing changes afterwards. A mark is the change's own, so one change
clearing its mark never clears another's still on its way; and a sweep clears only the marks it found at its
previous round too (`seen`): a mark set a moment ago may be a change still on its way to its record and its
edit, which the sweep's showing would miss, so it is shown again, once more, a sweep later. A message with no
record here (posted before, or by the webhook, or whose record could not be written) is not edited by the sweep;
a click on it still updates it through the click's own response_url.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger, metrics
from costguard.slack.live import Live, Part
from costguard.slack.notifier import Delivery, SlackNotifier
from costguard.state.batches import read_batch
from costguard.state.ledger import StateTableBusy, write_batch

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP_FOR = timedelta(days=14)  # a warning's story (kept until Monday, stopped, started again) ends within it
RESHOW_AT_MOST = 25  # stale messages shown again in one sweep: the rest wait for the next
ITEM_TRIES = 2  # a message's items written one by one (its batch refused): each tried this often
TRIES = 3  # a change that keeps losing the race to others' changes of the same message gives up, said so
ERRORS = (ClientError, BotoCoreError, StateTableBusy, SlackDeliveryError)
Where = tuple[str, str]  # a message's channel and ts
Change = Callable[[Part], Part | None]


class LiveMessages:
    def __init__(self, client: DynamoDBClient, table_name: str, notifier: Callable[[], SlackNotifier]) -> None:
        self.client = client
        self.table = table_name
        self.notifier = notifier

    def record(self, posted: Sequence[tuple[Delivery, Live]], now: datetime) -> None:
        """Messages just posted, kept for their later changes, with where each of their parts now lives. A
        message without a ts (the webhook's) cannot be edited and is not kept. Never raises: a message not
        kept is only one that will not change in place."""
        items: list[Any] = []
        expires = {"N": str(int((now + KEEP_FOR).timestamp()))}
        for delivery, live in posted:
            if not delivery.ts or delivery.route != "bot":
                continue
            items.append(_message_item(delivery.channel, delivery.ts, live, 1, expires))
            items += [_pointer_item(part.key, (delivery.channel, delivery.ts), expires) for part in live.parts]
        self._write(items)

    def kept_again(self, posted: Sequence[tuple[Where, Live]], now: datetime) -> None:
        """Messages posted whose keep failed (every write of it refused), kept now as posted, so that a change of
        them (a withdrawal) changes these and not an older message of their machines. A message whose record is
        there is left as it is (it may have changed since), and so is one whose machines' latest kept message is
        as new or newer. A pointer to the message itself is written again with it (written one by one, the
        pointer may have been kept while the record was refused: the message would never change). Never raises:
        one not kept is logged, and kept again later."""
        if not posted:
            return
        try:  # one read for them all, not a GetItem per warning every sweep: the messages whose record is there
            found = read_batch(self.client, self.table, _message_keys(posted), consistent=True)
            kept = {str(item["pk"]["S"]) for item in found}
        except (ClientError, BotoCoreError, StateTableBusy) as exc:
            logger.warning("live messages not read: kept again later", count=len(posted), error=str(exc)[:200])
            return
        lost = [(at, live) for at, live in posted if _message_key(*at)["pk"]["S"] not in kept]
        if not lost:
            return
        known = self.where(p.key for _, live in lost for p in live.parts)
        items: list[Any] = []
        expires = {"N": str(int((now + KEEP_FOR).timestamp()))}
        for at, live in lost:
            # its record is missing: a pointer to it points nowhere, as good as an older one
            keys = [p.key for p in live.parts if known.get(p.key) == at or older(known.get(p.key), at[1])]
            if keys:
                items.append(_message_item(*at, live, 1, expires))
                items += [_pointer_item(key, at, expires) for key in keys]
        if items:
            logger.info("messages whose keep failed, kept now", count=sum(1 for i in items if "body" in i))
        self._write(items)

    def _write(self, items: list[Any]) -> None:
        if not items:
            return
        try:
            write_batch(self.client, self.table, [{"PutRequest": {"Item": item}} for item in items])
        except (ClientError, BotoCoreError, StateTableBusy):
            # A warning not kept could never be withdrawn in place: a refused batch is written an item at a time,
            # each on its own (one refused is not the end of the others), and those refused tried once more.
            for _ in range(ITEM_TRIES):
                items, error = self._put_each(items)
                if not items:
                    return
            logger.warning("live messages not kept: they will not change in place", error=error[:200])
            metrics.add_metric(name="MessageUpdatesFailed", unit=MetricUnit.Count, value=1)

    def _put_each(self, items: Sequence[Any]) -> tuple[list[Any], str]:
        """Each item written on its own: those refused, and the last refusal."""
        refused, error = [], ""
        for item in items:
            try:
                self.client.put_item(TableName=self.table, Item=item)
            except (ClientError, BotoCoreError) as exc:
                refused.append(item)
                error = str(exc)
        return refused, error

    def where(self, keys: Iterable[str]) -> dict[str, Where]:
        """Where the latest live message about each of these machines is (those that have one). A read that
        fails finds nothing: the message is then not changed (logged)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Where] = {}
        try:
            if len(wanted) == 1:
                item = self.client.get_item(TableName=self.table, Key=_pointer_key(wanted[0]), ConsistentRead=True).get(
                    "Item"
                )
                items: Iterable[Any] = [item] if item else []
            else:
                items = read_batch(self.client, self.table, [_pointer_key(k) for k in wanted]) if wanted else []
            for item in items:
                key = str(item["pk"]["S"]).removeprefix("live-of#")
                found[key] = (item["channel"]["S"], item["ts"]["S"])
        except (ClientError, BotoCoreError, StateTableBusy) as exc:
            logger.warning("live messages not found: not changed in place", error=str(exc)[:200])
            metrics.add_metric(name="MessageUpdatesFailed", unit=MetricUnit.Count, value=1)
        return found

    def change(self, key: str, change: Change, *, ts: str = "") -> Where | None:
        """The latest live message about `key`, its part changed in place (`ts`: only if that message is this
        one, the one a click came from). Where it is, when it was changed; None when there is none, nothing
        to change, or the change failed (logged and counted)."""
        at = self.where([key]).get(key)
        if at is None or (ts and at[1] != ts):
            return None
        return at if self.change_at(at, key, change) else None

    def change_at(self, at: Where, key: str, change: Change) -> bool:
        """One part of the message at `at` changed, and the message edited. False (logged, counted) when it
        could not be; False, silently, when the message is not kept or the change does not apply."""
        return key in self.change_many([(at, key, change)])

    def change_many(self, changes: Sequence[tuple[Where, str, Change]]) -> set[str]:
        """Parts of several messages changed, each message written and edited once for all its parts (a sweep
        that stops ten of an owner's machines edits their warning once, not ten times). The keys whose parts
        now say so; a message that could not be changed is logged and counted, and its keys left out."""
        by_message: dict[Where, list[tuple[str, Change]]] = defaultdict(list)
        for at, key, change in changes:
            by_message[at].append((key, change))
        if not by_message:
            return set()
        mark = uuid.uuid4().hex[:12]
        marks = {at: f"{at[0]}#{at[1]}#{mark}" for at in by_message}
        # Before any record changes: an invocation ended between a record and its edit leaves its message marked.
        _stale(self.client, self.table, list(marks.values()), "ADD")
        done: set[str] = set()
        settled: list[str] = []  # the messages Slack shows as their record says (or lets go): marks cleared
        for at, parts in by_message.items():
            try:
                shown = self._change(at, parts)
            except ERRORS as exc:
                keys = [k for k, _ in parts]
                logger.warning("message not changed in place", keys=keys[:10], ts=at[1], error=str(exc)[:200])
                metrics.add_metric(name="MessageUpdatesFailed", unit=MetricUnit.Count, value=1)
                if isinstance(exc, SlackDeliveryError) and exc.lasting:
                    settled.append(marks[at])  # gone for good: let go
                continue  # else its record may be ahead of Slack: the next sweep shows it again
            done |= shown
            settled.append(marks[at])
        _stale(self.client, self.table, settled, "DELETE")
        return done

    def _change(self, at: Where, changes: Sequence[tuple[str, Change]]) -> set[str]:
        """The keys whose parts say the change now (changed, or already so)."""
        for _ in range(TRIES):
            read = self.read(at)
            if read is None:
                return set()
            live, version, expires = read
            new, said = live, set[str]()
            for key, change in changes:
                changed = new.changed(key, change)
                if changed is not None:
                    new, said = changed, said | {key}
            if new is live:
                return said  # nothing to change, or it says so already (a retry): nothing to write or show
            try:
                self.client.put_item(
                    TableName=self.table,
                    Item=_message_item(*at, new, version + 1, expires),
                    ConditionExpression="version = :v",
                    ExpressionAttributeValues={":v": {"N": str(version)}},
                )
            except self.client.exceptions.ConditionalCheckFailedException:
                continue  # someone changed another part meanwhile: change the newest
            break
        else:
            raise StateTableBusy(f"message {at[1]} kept changing under {TRIES} tries")
        self._show(at, new)
        metrics.add_metric(name="MessagesUpdated", unit=MetricUnit.Count, value=1)
        latest = self.read(at)
        if latest is not None and latest[1] > version + 1:  # a later change may have reached Slack before ours
            self._show(at, latest[0])
        return said

    def _show(self, at: Where, live: Live) -> None:
        self.notifier().update(at[0], at[1], live.message())  # refused: its message stays marked (change_many)

    def read(self, at: Where) -> tuple[Live, int, dict[str, str]] | None:
        item = self.client.get_item(TableName=self.table, Key=_message_key(*at), ConsistentRead=True).get("Item")
        if not item:
            return None
        return Live.from_json(item["body"]["S"]), int(item["version"]["N"]), {"N": str(item["expires_at"]["N"])}


_STALE = {"pk": {"S": "live-stale"}, "sk": {"S": "live-stale"}}
MARKS, SEEN = "messages", "seen"  # the stale item's marks, and those a sweep's round found (cleared at the next)


def reshow(messages: LiveMessages, at_most: int = RESHOW_AT_MOST) -> int:
    """The messages whose last edit Slack did not take, or never got (an invocation ended between a record and
    its edit), shown again as their record says (the current state), then no longer stale; the first that fails
    again ends the round (Slack is still not taking edits: they wait for the next sweep). How many were shown.
    Never raises."""
    shown = 0
    marks, seen = _stale_ones(messages.client, messages.table)
    by_message: dict[Where, list[str]] = defaultdict(list)  # a message's marks: one per change not known shown
    for member in marks:
        channel, _, rest = member.partition("#")
        by_message[(channel, rest.partition("#")[0])].append(member)
    newly_seen: list[str] = []
    cleared: list[str] = []
    for (channel, ts), members in list(by_message.items())[:at_most]:
        gone = False  # Slack refuses the message for good, or it has no record: let go, every mark with it
        try:
            read = messages.read((channel, ts))
            if read is not None:
                messages.notifier().update(channel, ts, read[0].message())
                latest = messages.read((channel, ts))
                if latest is not None and latest[1] != read[1]:  # changed meanwhile: the newest is shown
                    messages.notifier().update(channel, ts, latest[0].message())
        except SlackDeliveryError as refused:
            if not refused.lasting:
                logger.warning("stale message not shown again: next sweep", ts=ts, error=str(refused)[:200])
                break
            logger.warning("stale message gone: no longer shown", ts=ts, error=str(refused)[:200])
            gone = True
        except (ClientError, BotoCoreError, StateTableBusy) as exc:
            logger.warning("stale message not shown again: next sweep", ts=ts, error=str(exc)[:200])
            break
        else:
            shown += 1 if read is not None else 0
            gone = read is None
        # A mark seen at the previous round too is no change on its way: shown as its record says, cleared. A new
        # one may be a change between its mark and its record (shown above without it): cleared a round later.
        old = members if gone else [m for m in members if m in seen]
        _stale(messages.client, messages.table, old, "DELETE")
        cleared += old
        newly_seen += [m for m in members if m not in old]
    _stale(messages.client, messages.table, newly_seen, "ADD", SEEN)
    # No longer seen: those cleared now, and those their own change cleared since (found seen, no longer marked).
    _stale(messages.client, messages.table, sorted({*cleared, *(seen - set(marks))}), "DELETE", SEEN)
    if shown:
        metrics.add_metric(name="StaleMessagesShown", unit=MetricUnit.Count, value=shown)
    return shown


def _stale_ones(client: DynamoDBClient, table: str) -> tuple[list[str], set[str]]:
    """The stale messages' marks (channel#ts#mark), and those a sweep found already (nothing when the table will
    not say: shown again at a later sweep)."""
    try:
        item = client.get_item(TableName=table, Key=_STALE, ConsistentRead=True).get("Item") or {}
    except (ClientError, BotoCoreError) as exc:
        logger.warning("stale messages not read: shown again later", error=str(exc)[:200])
        return [], set()
    return sorted(item.get(MARKS, {}).get("SS", [])), set(item.get(SEEN, {}).get("SS", []))


def _stale(client: DynamoDBClient, table: str, members: Sequence[str], how: str, attribute: str = MARKS) -> None:
    """Messages marked stale (`ADD`) or no longer (`DELETE`), in one write. A write that fails is logged: a mark
    lost is a message shown at its next change instead; an unmark lost, one edit more that changes nothing."""
    if not members:
        return
    try:
        client.update_item(
            TableName=table,
            Key=_STALE,
            UpdateExpression=f"{how} {attribute} :m",
            ExpressionAttributeValues={":m": {"SS": list(dict.fromkeys(members))}},
        )
    except (ClientError, BotoCoreError) as exc:
        logger.warning("stale mark not kept", members=list(members)[:10], how=how, error=str(exc)[:200])


def _message_key(channel: str, ts: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"live#{channel}#{ts}"}, "sk": {"S": "live"}}


def _message_keys(posted: Sequence[tuple[Where, Live]]) -> list[dict[str, dict[str, str]]]:
    """The keys of these messages' records, each once (BatchGetItem refuses a key twice)."""
    return [_message_key(*at) for at in dict.fromkeys(at for at, _ in posted)]


def _pointer_key(key: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"live-of#{key}"}, "sk": {"S": "live-of"}}


def _pointer_item(key: str, at: Where, expires: dict[str, str]) -> dict[str, Any]:
    return {**_pointer_key(key), "channel": {"S": at[0]}, "ts": {"S": at[1]}, "expires_at": expires}


def older(found: Where | None, ts: str) -> bool:
    """Whether a machine's latest kept message (`found`) is missing, or older than the message posted at `ts`."""
    return found is None or _moment(found[1]) < _moment(ts)


def _moment(ts: str) -> tuple[int, int]:
    """A Slack ts ("1795968366.000012") in order: its seconds, then its sequence."""
    seconds, _, sequence = ts.partition(".")
    return (int(seconds or 0), int(sequence or 0)) if (seconds + sequence).isdigit() else (0, 0)


def _message_item(channel: str, ts: str, live: Live, version: int, expires: dict[str, str]) -> dict[str, Any]:
    return {
        **_message_key(channel, ts),
        "body": {"S": live.to_json()},
        "version": {"N": str(version)},
        "expires_at": expires,
    }
