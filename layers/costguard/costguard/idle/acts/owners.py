"""The sweep's Slack outside the outbox's deliveries: its owners' Slack ids found at once, a notice posted once to
the alerts channel, a message to an owner (once a key, where it must not be told twice)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.pricing import PriceBook
from costguard.core import formatting, tags
from costguard.core.errors import SlackDeliveryError
from costguard.core.people import owner_email
from costguard.core.records import Instance
from costguard.core.settings import Mode, Settings
from costguard.idle.acts.writes import Refused
from costguard.idle.report import Settled
from costguard.idle.words.messages import stop_failed_notice
from costguard.slack.blocks import Message, Mrkdwn, person
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import Claims, ClaimState, post_once
from costguard.state.ledger import LedgerWriteError
from costguard.state.outbox import Outbox

REPORT_TTL = timedelta(days=2)


@dataclass(kw_only=True, eq=False)
class OwnerMessages:
    """The sweep's Slack outside the outbox's deliveries: owners' ids found at once, a notice posted once to
    the alerts channel (a stop refused for good), a message to an owner."""

    claims: Claims
    outbox: Outbox
    notifier: Callable[[], SlackNotifier]
    prices: PriceBook
    settings: Settings
    zone: str = "UTC"  # the team's (TeamTimezone): a time's fallback text, and the keeps of owners Slack lacks
    mode: Mode = field(init=False)
    _expected: Sequence[Instance] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.mode = self.settings.mode

    def person(self, owner: str) -> Mrkdwn:
        """An owner as a message names them: their mention where Slack knows them (never in dry-run, which pings
        nobody), else their name."""
        email = owner_email(owner, self.settings.email_domain) if owner and self.mode is not Mode.DRY_RUN else None
        return person(owner, self.notifier().user_id_for(email) if email else None)

    def whose(self, who: Mrkdwn) -> str:
        """Whose clock "tomorrow 09:00" is on a keep button: the owner's own where Slack knows them, else the
        team's (buttons/worker.py reads the same)."""
        return "your time" if who.startswith("<@") else f"{formatting.place(self.zone)} time"

    def prepare(self, instance: Instance) -> None:
        """Made here, once, not by racing threads: the price lookup, the Slack client, the owners' ids."""
        self.prices.hourly(instance.instance_type, instance.region)
        self.notifier()
        expected, self._expected = self._expected, None
        if expected is not None:
            self.resolve_owners(expected)

    def report_once(self, key: str, message: Message, now: datetime) -> bool:
        """Post to the alerts channel unless this key was posted before; True if posted now."""
        channel = self.settings.alerts_channel
        posted = post_once(self.claims, self.notifier(), channel, key=key, message=message, now=now, ttl=REPORT_TTL)
        return posted is not None

    def report_refused(self, refused: Refused, now: datetime) -> dict[str, Settled]:
        """Each stop AWS refused for good, told to the alerts channel once (per warning), its pending notice
        then dropped (a failure there only leaves it to the next sweep, which drops it). One not told is
        retried: its notice stays, by machine, with why."""
        failed: dict[str, Settled] = {}
        told = []
        for instance, outcome, notice, code in refused:
            warned_at = instance.tags.get(tags.IDLE_WARNED_AT, "")
            key = f"stop-failed:{instance.instance_id}:{warned_at}"
            try:
                self.report_once(key, stop_failed_notice(instance, code, outcome.owner), now)
            except (ClientError, BotoCoreError, SlackDeliveryError) as exc:
                failed[instance.instance_id] = Settled.retry(exc)
                continue
            told.append(notice)
        if told:
            with contextlib.suppress(ClientError, BotoCoreError, LedgerWriteError):
                self.outbox.remove(told)
        return failed

    def expect(self, instances: Sequence[Instance]) -> None:
        """The machines this sweep may tell about: their owners are resolved before the first message."""
        self._expected = instances

    def resolve_owners(self, instances: Iterable[Instance]) -> None:
        """The Slack ids of everyone this sweep will tell, at once (in bulk when many are unknown)."""
        if self.mode is Mode.DRY_RUN:
            return  # dry-run tells the alerts channel only
        owners = {i.owner(self.settings.owner_tag_key) for i in instances} - {""}
        if owners:
            self.notifier().resolve(owner_email(o, self.settings.email_domain) or "" for o in sorted(owners))

    def tell(self, owner: str, message: Message, *, alone: bool = False) -> None:
        """A message to a machine's owner (or the alerts channel when Slack cannot reach them; `alone`: a question
        for them only, which raises SlackDeliveryError instead)."""
        email = owner_email(owner, self.settings.email_domain) if owner else None
        fallback = "" if alone else self.settings.alerts_channel
        self.notifier().send_to_owner(email, message, fallback_channel=fallback, owner=owner)


def owner_once(  # noqa: PLR0917
    notices: OwnerMessages,
    key: str,
    owner: str,
    message: Message,
    now: datetime,
    ttl: timedelta = REPORT_TTL,
    *,
    alone: bool = False,
) -> bool:
    """A message to a machine's owner once (per key, for `ttl`), but in dry-run, which tells no owner; True if
    told now. `alone`: to them only, never the alerts channel (an offer only they may answer)."""
    if notices.mode is Mode.DRY_RUN:
        return False
    claim = notices.claims.claim(key, now, ttl=ttl)
    if claim.state is not ClaimState.TAKEN:
        return False
    try:
        notices.tell(owner, message, alone=alone)
    except SlackDeliveryError:
        notices.claims.release(claim)
        raise
    notices.claims.done(claim)
    return True
