"""Once a day, about a machine costguard leaves running though it idles: on prepaid capacity (a stop saves
nothing), or of a type that might not start again (told to its owner while they work); and, the morning after,
an exemption its owner added when costguard's stop found the machine's run, offered back as a keep for its runs;
a keep-alive hook that holds an idle machine, offered the same in its place; and a machine held because costguard
cannot look inside it, its owner asked for their word in place of the hold."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard.core import formatting
from costguard.core.errors import SlackDeliveryError
from costguard.core.formatting import duration
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.idle.acts.owners import OwnerMessages, owner_once
from costguard.idle.rules.capacity import held_for_run
from costguard.idle.rules.decision import Action, Decision, StartFor
from costguard.idle.rules.offers import (
    HOOK_ASKED_AGAIN,
    HookOffer,
    UnseenOffer,
    hook_offer,
    keep_offer,
    looks_now,
    still_asking,
    unseen_offer,
)
from costguard.idle.rules.pipeline import Past
from costguard.idle.words.capacity import scarce_idle_notice
from costguard.idle.words.money import prepaid_idle_notice
from costguard.idle.words.offers import hook_offer_notice, keep_offer_notice, unseen_offer_notice
from costguard.slack.blocks import Mrkdwn
from costguard.state.claims import ClaimState


def promised_start(decision: Decision) -> str:
    """The start costguard promised for the machine's run (kept in its start log when the rules announced it), as a
    Stop anyway button carries it: a person's stop keeps it, as Stop now does; "" when none is due."""
    if decision.start_at is None or decision.start_for is not StartFor.RUN:
        return ""
    return formatting.format_time(decision.start_at)


def tell_prepaid(
    notices: OwnerMessages, instance: Instance, decision: Decision, now: datetime, *, clear: Callable[[], None]
) -> bool:
    """Once a day, to the alerts channel and (but in dry-run) to the owner: the machine idles on prepaid
    capacity, left running, with a button to stop it anyway. A warning given before the bill was read goes.
    True if the day's first tell went out now."""
    if decision.action is Action.CLEAR_WARNING:
        clear()
    owner = instance.owner(notices.settings.owner_tag_key)
    if decision.bill is None:
        return False
    idle = duration(decision.judgement.idle_minutes(now)) if decision.judgement is not None else "a while"
    message = prepaid_idle_notice(
        instance,
        decision.bill,
        notices.person(owner),
        idle,
        account=instance.account,
        zone=notices.zone,
        start_at=promised_start(decision),
    )
    day = f"{instance.instance_id}:{now:%Y-%m-%d}"
    told = notices.report_once(f"prepaid:{day}", message, now)
    if owner:
        told = owner_once(notices, f"prepaid-owner:{day}", owner, message, now) or told
    return told


def tell_scarce(
    notices: OwnerMessages, instance: Instance, decision: Decision, now: datetime, *, clear: Callable[[], None]
) -> bool:
    """Once a day, to the owner (in dry-run, the alerts channel): the machine idles, and is left running while
    its owner works because it might not start again; a warning given before goes. True if the day's first
    tell went out now."""
    if decision.action is Action.CLEAR_WARNING:
        clear()
    owner = instance.owner(notices.settings.owner_tag_key)
    idle = duration(decision.judgement.idle_minutes(now)) if decision.judgement is not None else "a while"
    hourly = notices.prices.hourly(instance.instance_type, instance.region).usd_per_hour
    run = held_for_run(decision)
    who, start_at = notices.person(owner), promised_start(decision)
    message = scarce_idle_notice(instance, decision.scarce, who, idle, hourly, run=run, start_at=start_at, now=now)
    day = f"{instance.instance_id}:{now:%Y-%m-%d}"
    told = notices.mode is Mode.DRY_RUN and notices.report_once(f"scarce:{day}", message, now)
    return owner_once(notices, f"scarce-owner:{day}", owner, message, now) or told  # no owner: the alerts channel


OFFER_TTL = timedelta(days=30)  # asked once: the claim outlives the week the offer may be made in
PastOf = Callable[[Sequence[tuple[Instance, Decision]], Mapping[str, Sequence[Any]], datetime], Mapping[str, Past]]


def runs_of(past: Past | None) -> str:
    """A machine's runs as costguard knows them from its last two weeks (recurring work learned, else work of
    its own at night), as the messages say them after "it"; "" when none is known."""
    if past is None:
        return ""
    if past.learned is not None and past.learned.pattern is not None:
        return past.learned.pattern.describe()
    return past.night.describe() if past.night is not None and past.night.nights else ""


@dataclass(kw_only=True)
class KeepOffers:
    """The sweep's offers of a keep for its runs in place of an exemption its owner added right after costguard's
    stop: on a weekday morning, each machine's runs read from its last two weeks (only for the few machines such
    an offer is due for), told to the owner once."""

    notices: OwnerMessages
    past: PastOf  # the Learner's reading (reads/fortnights.py), its `blind` asked for every machine
    zone: str  # the team's (TeamTimezone)

    def run(self, candidates: Sequence[Instance], gpu_series: Mapping[str, Sequence[Any]], now: datetime) -> list[str]:
        """The machines offered a keep for their runs now."""
        due = [i for i in candidates if looks_now(i, now, self.zone)]
        if not due or notices_silent(self.notices):
            return []
        asked = [(i, Decision(i.instance_id, Action.STOP, "its runs, for a keep that ends")) for i in due]
        try:
            past = self.past(asked, gpu_series, now)
        except (ClientError, BotoCoreError) as exc:  # a nicety: the next morning asks again
            logger.warning("keep offers not read", machines=len(due), error=str(exc)[:200])
            return []
        offered = []
        for instance in due:
            offer = keep_offer(instance, runs_of(past.get(instance.instance_id)), now, self.zone)
            if offer is None:
                continue
            owner = instance.owner(self.notices.settings.owner_tag_key)
            message = keep_offer_notice(instance, offer, self.notices.person(owner), now, zone=self.zone)
            try:
                told = owner_once(self.notices, offer.key, owner, message, now, ttl=OFFER_TTL)
            except (ClientError, BotoCoreError, SlackDeliveryError) as exc:
                logger.warning("keep offer not told", instance_id=instance.instance_id, error=str(exc)[:200])
                continue
            if told:
                logger.info("keep offered for its runs", instance_id=instance.instance_id, runs=offer.runs)
                offered.append(instance.instance_id)
        return offered

    def hooks(self, decided: Sequence[tuple[Instance, Decision]], now: datetime) -> list[str]:
        """The machines whose keep-alive hook holds them idle (the sweep's decisions: `KeptFor.ITS_HOOK`), offered a
        keep for their runs in its place: once a weekday, where their own schedule says their runs."""
        offers = [(i, hook_offer(i, d, d.runs, now, self.zone)) for i, d in decided]
        return self._ask(offers, now, kind="hook", said="keep offered for its runs in place of its hook")

    def unseen(self, decided: Sequence[tuple[Instance, Decision]], now: datetime) -> list[str]:
        """The machines held only because costguard cannot look inside them (the sweep's decisions: blind, and held
        for GPUs nothing sees or for nights not watched yet), their owner asked for their word once a weekday."""
        offers = [(i, unseen_offer(i, d, now, self.zone)) for i, d in decided]
        return self._ask(offers, now, kind="unseen", said="owner asked: nothing sees into the machine")

    def _ask(
        self, offers: Sequence[tuple[Instance, HookOffer | UnseenOffer | None]], now: datetime, *, kind: str, said: str
    ) -> list[str]:
        """Each offer made (None: none due) asked of its owner alone, once a day while `still_asking`; only in
        `enforce` (its yes lets costguard stop the machine), never in the alerts channel. The machines asked now."""
        if self.notices.mode is not Mode.ENFORCE:
            return []
        asked = []
        for instance, offer in offers:
            owner = instance.owner(self.notices.settings.owner_tag_key)
            who = self.notices.person(owner) if offer is not None and owner else Mrkdwn("")
            if offer is None or not who.startswith("<@"):  # an owner's own question: never the alerts channel's
                continue
            iid = instance.instance_id
            try:
                if not still_asking(self._first_asked(iid, now, kind=kind), now):
                    continue
            except (ClientError, BotoCoreError) as exc:  # a nicety: the next sweep asks again
                logger.warning(f"{kind} offer not read", instance_id=iid, error=str(exc)[:200])
                continue
            if isinstance(offer, HookOffer):
                message = hook_offer_notice(instance, offer, who, now, zone=self.zone)
            else:
                message = unseen_offer_notice(instance, offer, who, zone=self.zone)
            try:
                told = owner_once(self.notices, offer.key, owner, message, now, ttl=OFFER_TTL, alone=True)
            except (ClientError, BotoCoreError, SlackDeliveryError) as exc:
                logger.warning(f"{kind} offer not told", instance_id=iid, error=str(exc)[:200])
                continue
            if told:
                logger.info(said, instance_id=iid)
                asked.append(iid)
        return asked

    def _first_asked(self, instance_id: str, now: datetime, *, kind: str = "hook") -> datetime | None:
        """When the offer of this `kind` about this machine was first made (now, if never: so recorded), kept for
        HOOK_ASKED_AGAIN; None while another sweep records it."""
        claims = self.notices.claims
        claim = claims.claim(f"{kind}-offer-since:{instance_id}", now, ttl=HOOK_ASKED_AGAIN)
        if claim.state is ClaimState.TAKEN:
            claims.done(claim, detail=formatting.format_time(now))
            return now
        return formatting.parse_time(claim.detail) if claim.state is ClaimState.DONE else None


def notices_silent(notices: OwnerMessages) -> bool:
    """dry-run tells no owner: nothing to offer."""
    return notices.mode is Mode.DRY_RUN
