"""Once-only delivery: claims in the state table, and posting a notice exactly once.

A claim is taken before the work (a Slack post, a click) and marked done only after it: a retry that
finds it done does nothing, a retry that finds it pending behind a live lease waits for a later try,
and a retry that finds a pending claim whose lease has run out (the first attempt was killed, timed
out, or lost its answer) takes it over and does the work. Each claim carries its taker's token: when
DynamoDB applied a write whose answer was lost and botocore sent it again, the retry fails its
condition, and the token read back says the claim is ours after all.

Slack posts have no idempotency key: a kill between a post and its done mark would mean one duplicate.
So each message carries its claim's block id, and an attempt that takes over a claim whose lease ran
out first looks for that block in the channel's history (conversations.history): found, the claim is
marked done without a second post; unreadable, the message is posted again.

Powertools' Idempotency utility does the same for whole invocations (in-progress expiry from the
Lambda context); costguard claims single notices inside an invocation (one per owner DM, one per
reminder), needs the done mark to come after a delivery it cannot repeat safely, and needs its own
applied-but-unanswered writes recognised, so it keeps this small module instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from costguard.core.errors import CostguardError, SlackDeliveryError
from costguard.slack.blocks import Message
from costguard.slack.notifier import Delivery, SlackNotifier

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Shorter than the time before a retry arrives (Lambda retries an async event after a minute or more;
# SQS makes a message visible again after its visibility timeout), longer than one delivery may take.
LEASE = timedelta(seconds=55)
PENDING, DONE = "pending", "done"
HISTORY_SKEW = timedelta(minutes=2)  # the claim's clock (costguard's) against the message's ts (Slack's)


class ClaimState(StrEnum):
    TAKEN = "taken"  # ours: do the work, then mark it done
    DONE = "done"  # done before: nothing to do
    HELD = "held"  # pending behind a live lease: someone is doing it now


class ClaimHeld(CostguardError):
    """Another attempt holds the claim's lease: fail this one so that it is retried after the lease."""


@dataclass(frozen=True)
class Claim:
    key: str
    token: str
    state: ClaimState
    detail: str = ""  # what the work that marked it done left for later attempts (a channel id)
    taken_over: datetime | None = None  # taken from an attempt whose lease ran out: when that one began


def marker_of(key: str) -> str:
    """The block id a claim's message carries, to find it in the channel's history."""
    return "cg-claim-" + hashlib.sha256(key.encode()).hexdigest()[:24]


class Claims:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def claim(self, key: str, now: datetime, *, ttl: timedelta, lease: timedelta = LEASE) -> Claim:
        token = uuid.uuid4().hex
        item: dict[str, Any] = {
            "pk": {"S": f"notice#{key}"},
            "sk": {"S": "notice"},
            "at": {"S": now.isoformat()},
            "status": {"S": PENDING},
            "token": {"S": token},
            "lease_until": {"N": str(int((now + lease).timestamp()))},
            "expires_at": {"N": str(int((now + ttl).timestamp()))},
        }
        try:
            answer: Any = self.client.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk) OR (#s = :pending AND lease_until < :now)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":pending": {"S": PENDING}, ":now": {"N": str(int(now.timestamp()))}},
                ReturnValues="ALL_OLD",
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            state, detail = self._state_of(key, token)
            return Claim(key, token, state, detail)
        before = (answer.get("Attributes") or {}).get("at", {}).get("S")
        return Claim(key, token, ClaimState.TAKEN, taken_over=datetime.fromisoformat(before) if before else None)

    def done(self, claim: Claim, detail: str = "") -> None:
        """The work is delivered: no later attempt will do it again (`detail` is kept for them)."""
        self.client.update_item(
            TableName=self.table,
            Key=self._key(claim.key),
            UpdateExpression="SET #s = :done, detail = :detail REMOVE lease_until",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":done": {"S": DONE}, ":detail": {"S": detail}},
        )

    def revise(self, key: str, detail: str) -> None:
        """Replace what a done claim keeps for later attempts (a message edited or posted anew)."""
        self.client.update_item(
            TableName=self.table,
            Key=self._key(key),
            UpdateExpression="SET detail = :detail",
            ConditionExpression="#s = :done",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":done": {"S": DONE}, ":detail": {"S": detail}},
        )

    def release(self, claim: Claim) -> None:
        """The work failed in a way the next attempt should retry at once (not after the lease)."""
        # Someone may have taken it over after our lease ran out: then it is theirs, and stays.
        with contextlib.suppress(self.client.exceptions.ConditionalCheckFailedException):
            self.client.delete_item(
                TableName=self.table,
                Key=self._key(claim.key),
                ConditionExpression="#t = :token",
                ExpressionAttributeNames={"#t": "token"},
                ExpressionAttributeValues={":token": {"S": claim.token}},
            )

    def _state_of(self, key: str, token: str) -> tuple[ClaimState, str]:
        found: Any = self.client.get_item(TableName=self.table, Key=self._key(key), ConsistentRead=True).get("Item")
        if not found:
            return ClaimState.HELD, ""  # deleted between our write and this read: the next attempt will know
        if found.get("token", {}).get("S") == token:
            return ClaimState.TAKEN, ""  # our write was applied; its answer was lost and botocore sent it again
        status = found.get("status", {}).get("S", DONE)  # claims from before leases were taken after delivery
        detail = str(found.get("detail", {}).get("S", ""))
        return (ClaimState.DONE if status == DONE else ClaimState.HELD), detail

    @staticmethod
    def _key(key: str) -> dict[str, Any]:
        return {"pk": {"S": f"notice#{key}"}, "sk": {"S": "notice"}}


def post_once(
    claims: Claims,
    notifier: SlackNotifier,
    channel: str,
    *,
    key: str,
    message: Message,
    now: datetime,
    ttl: timedelta,
) -> Delivery | None:
    """Post unless `key` was posted before; the delivery, or None if it had been. ClaimHeld if another
    attempt is posting it right now (the caller fails, and is retried after the lease)."""
    claim = claims.claim(key, now, ttl=ttl)
    if claim.state is ClaimState.DONE:
        return None
    if claim.state is ClaimState.HELD:
        raise ClaimHeld(f"{key} is being delivered by another attempt")
    if claim.taken_over is not None and posted_before(notifier, channel, key, claim.taken_over):
        claims.done(claim)  # the attempt that died had posted it: recorded now, not posted again
        return None
    try:
        delivery = notifier.post(channel, message.marked(marker_of(key)))
    except SlackDeliveryError as exc:
        if not exc.maybe_delivered:
            claims.release(claim)
        raise
    claims.done(claim)
    return delivery


def posted_before(notifier: SlackNotifier, channel: str, key: str, since: datetime) -> bool:
    """Whether the message of a claim whose attempt died (its lease ran out) is in the channel's history
    already. Unreadable history (a scope missing, Slack down) answers no: the message is posted again,
    the one duplicate a kill between a post and its record may cost."""
    try:
        return bool(notifier.find(channel, (since - HISTORY_SKEW).timestamp(), [marker_of(key)]))
    except SlackDeliveryError:
        return False
