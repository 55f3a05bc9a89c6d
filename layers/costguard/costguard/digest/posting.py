"""Posting a digest: a channel post, its files (a chart, a CSV) and the replies in its thread, each once, and
each person's direct message, once; so that a retry sends only what did not go out. Shared by the weekly
digest, the organization's digest and the deep dive.

Each part has its claim (state/claims.py): the post `key`, a file `key:<file>`, a reply `key:<reply>`, a
person's message `key:<Slack user id>`. The post's claim keeps where it went, the channel id and the post's
ts, for a retry's files and replies: a retry after the post went out neither posts it again nor loses the
thread. A post or a reply whose attempt died between going out and being recorded carries its claim's block
id, and the retry that takes the claim over looks for it (the channel's history, or the thread's replies)
before it posts again: found, it is recorded (and the thread goes on under it); unreadable, it is posted
again, the one duplicate a kill there may cost.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from costguard.core.errors import CostguardError, SlackDeliveryError
from costguard.core.observability import logger
from costguard.digest.owners import OwnerWeek, owner_message
from costguard.slack.blocks import Message
from costguard.slack.notifier import Delivery, SlackNotifier
from costguard.state.claims import HISTORY_SKEW, Claim, ClaimHeld, Claims, ClaimState, marker_of, post_once

TTL = timedelta(days=30)
# No direct message is started with less than this left: the retry (the scheduler's, minutes later)
# sends the rest, and every message that went out is recorded (claimed done) before the run ends.
SLACK_RESERVE_SECONDS = 60.0


class DigestIncomplete(CostguardError):
    """A part of the digest (the chart, a reply, an owner's direct message) did not go out: the invocation
    fails so that the scheduler runs it again, and the retry sends only what is missing."""


@dataclass(frozen=True)
class Attachment:
    """A file that goes with a channel post (a chart, a CSV), made only when it is to be uploaded."""

    name: str  # its part of the claim's key
    content: Callable[[], bytes]
    filename: str
    title: str


@dataclass
class Posted:
    posted: bool  # the post went out in this run (False: an earlier attempt had sent it)
    files: list[str] = field(default_factory=list)  # the ids of the files uploaded in this run
    missing: list[str] = field(default_factory=list)  # what did not go out, for the retry
    replies: int = 0  # the thread's replies posted in this run


def post_with_files(
    notifier: SlackNotifier,
    claims: Claims,
    *,
    key: str,
    channel: str,
    message: Callable[[], Message],
    attachments: Sequence[Attachment],
    now: datetime,
    replies: Callable[[], Sequence[tuple[str, Message]]] = lambda: (),
) -> Posted:
    """A channel post, its files and the replies in its thread (`replies`: each a name and a message), each
    once. A post Slack refused raises (nothing else can go without it); a file or a reply that did not go
    out is named, for the retry."""
    post = claims.claim(key, now, ttl=TTL)
    if post.state is ClaimState.HELD:
        raise ClaimHeld(f"{key} is being posted by another attempt")
    out = Posted(posted=False)
    where, _, ts = (post.detail or channel).partition(" ")
    if post.state is ClaimState.TAKEN:
        delivery = _lost_post(notifier, channel, post)
        if delivery is None:
            try:
                delivery = notifier.post(channel, message().marked(marker_of(key)))
            except SlackDeliveryError as exc:
                if not exc.maybe_delivered:
                    claims.release(post)
                raise
            out.posted = True
        where, ts = delivery.channel, delivery.ts
        claims.done(post, detail=f"{where} {ts}".strip())  # the channel id and the ts, for a retry's files and replies
    for attachment in attachments:
        upload = claims.claim(f"{key}:{attachment.name}", now, ttl=TTL)
        if upload.state is not ClaimState.TAKEN:
            continue
        try:
            out.files.append(
                notifier.upload_file(where, attachment.content(), filename=attachment.filename, title=attachment.title)
            )
            claims.done(upload)
        except SlackDeliveryError as exc:
            claims.release(upload)
            out.missing.append(f"{attachment.name}: {exc}")
    # Without the post's ts (it went by the webhook), the replies go to the channel itself: never lost.
    for name, reply in replies():
        _reply(
            notifier,
            claims,
            key=f"{key}:{name}",
            channel=where if ts else channel,
            ts=ts,
            reply=reply,
            now=now,
            out=out,
        )
    return out


def _reply(
    notifier: SlackNotifier,
    claims: Claims,
    *,
    key: str,
    channel: str,
    ts: str,
    reply: Message,
    now: datetime,
    out: Posted,
) -> None:
    claim = claims.claim(key, now, ttl=TTL)
    if claim.state is ClaimState.DONE:
        return
    if claim.state is ClaimState.HELD:
        out.missing.append(f"{key}: being posted by another attempt")
        return
    if _lost_post(notifier, channel, claim, thread_ts=ts) is not None:
        claims.done(claim)  # the attempt that died had posted it: recorded now, not posted again
        return
    try:
        notifier.post(channel, reply.marked(marker_of(key)), thread_ts=ts)
    except SlackDeliveryError as exc:
        if not exc.maybe_delivered:
            claims.release(claim)
        out.missing.append(f"{key}: {exc}")
        return
    claims.done(claim)
    out.replies += 1


def _lost_post(notifier: SlackNotifier, channel: str, claim: Claim, *, thread_ts: str = "") -> Delivery | None:
    """The message of a claim taken over from an attempt that died, if Slack shows it went out: found by its
    block id in the channel's history (or the thread's replies). None when not found or not readable."""
    if claim.taken_over is None:
        return None
    marker = marker_of(claim.key)
    since = (claim.taken_over - HISTORY_SKEW).timestamp()
    try:
        return notifier.find(channel, since, [marker], thread_ts=thread_ts).get(marker)
    except SlackDeliveryError:
        return None


def chart(content: Callable[[], bytes], filename: str) -> Attachment:
    return Attachment("chart", content, filename, "GPU-hours used and idle a day, and the idle hours' cost")


@dataclass
class Told:
    """What became of the owners' direct messages."""

    told: list[str] = field(default_factory=list)  # owners (their tags' values) whose person got the message
    unreachable: list[str] = field(default_factory=list)  # Slack knows no such person: nothing to retry
    missing: list[str] = field(default_factory=list)  # what did not go out, for the retry


def tell_owners(
    notifier: SlackNotifier,
    claims: Claims,
    weeks: Sequence[OwnerWeek],
    *,
    key: str,
    basis: Mapping[str, str],
    now: datetime,
    time_left: Callable[[], float] = lambda: float("inf"),
) -> Told:
    """One direct message a person, whatever the number of owner tags and accounts their weeks come from
    (merged by the Slack user their emails belong to), each once (`key:<user id>`). One person's message
    that fails does not cost the others theirs."""
    told = Told()
    by_email: dict[str, list[OwnerWeek]] = defaultdict(list)
    for week in weeks:
        if week.email:
            by_email[week.email.lower()].append(week)
        else:
            told.unreachable.append(week.owner)  # the tag names no one Slack can know
    # Every owner's Slack id at once (one users.list walk when many are unknown), not one lookup each.
    notifier.resolve(by_email)
    people: dict[str, list[OwnerWeek]] = defaultdict(list)
    for email, theirs in sorted(by_email.items()):
        try:
            user = notifier.user_id_for(email, strict=True)
        except SlackDeliveryError as exc:
            logger.warning("owner not looked up", error=str(exc))
            told.missing += [f"{w.owner}: {exc}" for w in theirs]
            continue
        if user is None:
            told.unreachable += [w.owner for w in theirs]
            continue
        people[user] += theirs
    for user, theirs in sorted(people.items()):
        if time_left() < SLACK_RESERVE_SECONDS:
            told.missing.append(f"{user}: too little time left in this run; the retry sends it")
            continue
        try:
            message = owner_message(theirs, basis, now=now)
            sent = post_once(claims, notifier, user, key=f"{key}:{user}", message=message, now=now, ttl=TTL)
        except (SlackDeliveryError, ClaimHeld) as exc:
            logger.warning("owner digest not delivered", user=user, error=str(exc))
            told.missing.append(f"{user}: {exc}")
            continue
        if sent is not None:
            told.told += [w.owner for w in theirs]
    return told
