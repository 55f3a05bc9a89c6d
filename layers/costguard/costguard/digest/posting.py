"""Posting a digest: a channel post and its files (a chart, a CSV), each once, so that a retry sends
only what did not go out. Shared by the weekly digest, the organization's digest and the deep dive."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from costguard.core.errors import CostguardError, SlackDeliveryError
from costguard.slack.blocks import Message
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import ClaimHeld, Claims, ClaimState

TTL = timedelta(days=30)


class DigestIncomplete(CostguardError):
    """A part of the digest (the chart, an owner's direct message) did not go out: the invocation fails
    so that the scheduler runs it again, and the retry sends only what is missing."""


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


def post_with_files(
    notifier: SlackNotifier,
    claims: Claims,
    *,
    key: str,
    channel: str,
    message: Callable[[], Message],
    attachments: Sequence[Attachment],
    now: datetime,
) -> Posted:
    """A channel post and its files, each once (`key`, `key:<attachment>`). A post Slack refused raises
    (nothing else can go without it); a file that did not go out is named, for the retry."""
    post = claims.claim(key, now, ttl=TTL)
    if post.state is ClaimState.HELD:
        raise ClaimHeld(f"{key} is being posted by another attempt")
    posted_in = post.detail or channel
    out = Posted(posted=False)
    if post.state is ClaimState.TAKEN:
        try:
            delivery = notifier.post(channel, message())
        except SlackDeliveryError:
            claims.release(post)
            raise
        posted_in = delivery.channel
        claims.done(post, detail=posted_in)  # the channel id, for a retry's uploads
        out.posted = True
    for attachment in attachments:
        upload = claims.claim(f"{key}:{attachment.name}", now, ttl=TTL)
        if upload.state is not ClaimState.TAKEN:
            continue
        try:
            out.files.append(
                notifier.upload_file(
                    posted_in, attachment.content(), filename=attachment.filename, title=attachment.title
                )
            )
            claims.done(upload)
        except SlackDeliveryError as exc:
            claims.release(upload)
            out.missing.append(f"{attachment.name}: {exc}")
    return out


def chart(content: Callable[[], bytes], filename: str) -> Attachment:
    return Attachment("chart", content, filename, "GPU-hours used and idle, day by day")
