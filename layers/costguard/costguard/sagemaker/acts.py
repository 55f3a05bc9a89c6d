"""Carrying out a SageMaker decision and telling it: the warning (delivered, then recorded in the resource's
tags), the stop or deletion (told before it is made, once: a claim per warning), the cleared warning. Every
effect goes to the ledger; dry-run tags nothing, stops nothing, and tells the alerts channel only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import error_code
from costguard.aws.pricing import PriceBook
from costguard.aws.sagemaker import SageMaker
from costguard.core import formatting, tags
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.people import owner_email
from costguard.core.records import Price
from costguard.core.sagemaker import Kind, Resource
from costguard.core.settings import Mode, SageMakerPolicy, Settings
from costguard.sagemaker.rules.decision import Action, Decision
from costguard.sagemaker.rules.report import Outcome
from costguard.sagemaker.words.messages import (
    act_failed_notice,
    act_notice,
    acted,
    dry_run_notice,
    hourly_cost,
    told_above,
    warning,
)
from costguard.slack.blocks import Message, Mrkdwn, person
from costguard.slack.live import Live
from costguard.slack.notifier import Delivery, SlackNotifier
from costguard.state.claims import ClaimHeld, Claims, ClaimState, post_once
from costguard.state.entries import Entry, EntryKind
from costguard.state.ledger import Ledger
from costguard.state.live import LiveMessages, Where

REFUSED = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"}
ACT_TTL = timedelta(days=30)
REPORT_TTL = timedelta(days=2)
SLACK_RESERVE_SECONDS = 60.0


class SageMakerActs:
    def __init__(
        self,
        *,
        api: SageMaker,
        prices: PriceBook,
        ledger: Ledger,
        claims: Claims,
        notifier: Callable[[], SlackNotifier],
        settings: Settings,
        policy: SageMakerPolicy,
        time_left: Callable[[], float] | None = None,
    ) -> None:
        self.api = api
        self.prices = prices
        self.ledger = ledger
        self.claims = claims
        self.notifier = notifier
        self.settings, self.mode, self.policy = settings, settings.mode, policy
        self.time_left = time_left or (lambda: float("inf"))
        live = LiveMessages(claims.client, claims.table, notifier)
        self.said = Said(notifier, settings, live, zone=policy.team_timezone)

    def price(self, resource: Resource) -> Price:
        return self.prices.sagemaker_hourly(resource.instance_type, resource.region, resource.kind.value)

    def act(self, resource: Resource, decision: Decision, now: datetime) -> Outcome:
        outcome = Outcome(resource.key, decision.action, decision.reason)
        logger.info("sagemaker decision", resource=resource.key, action=decision.action.value, reason=decision.reason)
        slack = decision.action in (Action.WARN, Action.ACT)
        if slack and self.time_left() < SLACK_RESERVE_SECONDS:
            outcome.applied, outcome.detail = False, "deferred: too little time left; the next sweep carries on"
            return outcome
        try:
            if decision.action is Action.WARN:
                self._warn(resource, decision, outcome, now)
            elif decision.action is Action.ACT:
                self._act(resource, decision, outcome, now)
            elif decision.action is Action.CLEAR_WARNING:
                present = [k for k in tags.WARNING_TAGS if k in resource.tags]
                outcome.applied = self.api.delete_tags(resource.arn, present)
                self._record(resource, EntryKind.SAGEMAKER_CLEAR, outcome, now)
        except SlackDeliveryError as exc:
            outcome.retry(f"Slack: {exc}")
        except ClaimHeld as exc:
            outcome.retry(exc)
        except (ClientError, BotoCoreError) as exc:
            outcome.retry(error_code(exc))
        return outcome

    def _warn(self, resource: Resource, decision: Decision, outcome: Outcome, now: datetime) -> None:
        owner = resource.owner(self.settings.owner_tag_key)
        price = self.price(resource)
        if self.mode is Mode.DRY_RUN:
            key = f"dry-run:sagemaker:{resource.key}:{now:%Y-%m-%d}"
            posted = self.report_once(
                key, dry_run_notice(resource, decision, price, owner, self.policy.team_timezone), now
            )
            outcome.applied, outcome.detail = False, "" if posted else "reported already"
            return
        # Delivered first; only a delivered warning is recorded on the resource, so that nothing is ever
        # stopped or deleted on a warning nobody received (a crash between the two costs one duplicate).
        self.said.warn(resource, decision, price, now)
        state = {tags.IDLE_WARNED_AT: formatting.format_time(now)}
        if decision.will_act and decision.act_after is not None:
            state[tags.STOP_AFTER] = formatting.format_time(decision.act_after)
        outcome.applied = self.api.add_tags(resource.arn, state)
        self._record(resource, EntryKind.SAGEMAKER_WARN, outcome, now)

    def _act(self, resource: Resource, decision: Decision, outcome: Outcome, now: datetime) -> None:
        """Told first, then done, once per warning: a retry after a crash finds the claim and does it again
        only if the first attempt never finished (one duplicate message at most)."""
        owner = resource.owner(self.settings.owner_tag_key)
        warned = resource.tags.get(tags.IDLE_WARNED_AT, "")
        claim = self.claims.claim(f"sagemaker-act:{resource.key}:{warned}", now, ttl=ACT_TTL)
        if claim.state is ClaimState.DONE:
            outcome.applied, outcome.detail = False, "done already"
            return
        if claim.state is ClaimState.HELD:
            raise ClaimHeld(f"{resource.key} is being acted on by another sweep")
        price = self.price(resource)
        try:
            warned_in = self.said.act(resource, decision, price, now)
        except SlackDeliveryError:
            self.claims.release(claim)  # not told, not done: the next sweep tries both again
            raise
        try:
            outcome.applied = self._carry_out(resource, owner, now)
        except ClientError as exc:
            self.post_alert(act_failed_notice(resource, error_code(exc), owner))
            if error_code(exc) in REFUSED:  # exempt by IAM, or a right not granted: no retry would help
                self.claims.done(claim)
                outcome.applied, outcome.detail = False, f"refused: {error_code(exc)}"
                return
            self.claims.release(claim)
            raise
        self.claims.done(claim)
        if warned_in is not None and outcome.applied:  # done: its warning says so, with what undoes it
            self.said.live.change_at(warned_in, resource.key, acted(resource, now, self.said.zone))
        kind = EntryKind.SAGEMAKER_STOP if resource.kind is Kind.NOTEBOOK else EntryKind.SAGEMAKER_DELETE
        self._record(resource, kind, outcome, now, saving=hourly_cost(resource, price) or 0.0)

    def _carry_out(self, resource: Resource, owner: str, now: datetime) -> bool:
        if resource.kind is Kind.NOTEBOOK:
            stopped = self.api.stop_notebook(resource.name)
            if stopped:
                self.api.add_tags(
                    resource.arn,
                    {tags.STOPPED_AT: formatting.format_time(now), tags.STOP_REASON: "idle (costguard)"},
                )
            return stopped
        if resource.kind is Kind.ENDPOINT:
            # The configuration says which endpoint costguard deleted from it, and whose: Recreate needs both.
            kept = {tags.deleted_endpoint(resource.name): owner}
            self.api.tag_endpoint_config(resource.config_name, kept)
            return self.api.delete_endpoint(resource.name)
        return self.api.delete_app(resource.name)

    def _record(
        self, resource: Resource, kind: EntryKind, outcome: Outcome, now: datetime, *, saving: float = 0.0
    ) -> None:
        self.ledger.record(
            Entry(
                at=now,
                kind=kind,
                instance_id=resource.key,
                region=resource.region,
                mode=self.mode.value,
                applied=outcome.applied,
                owner=resource.owner(self.settings.owner_tag_key),
                instance_type=resource.instance_type,
                reason=outcome.reason,
                hourly_saving=saving,
            )
        )

    def report_once(self, key: str, message: Message, now: datetime) -> bool:
        channel = self.settings.alerts_channel
        return (
            post_once(self.claims, self.notifier(), channel, key=key, message=message, now=now, ttl=REPORT_TTL)
            is not None
        )

    def post_alert(self, message: Message) -> None:
        self.notifier().post(self.settings.alerts_channel, message)

    def tell(self, owner: str, message: Message) -> Delivery:
        return self.said.tell(owner, message)


class Said:
    """What the SageMaker sweep tells owners: the warning (kept, to change in place), and the stop or deletion,
    a reply under its warning where there is one, else a message of its own with what undoes it."""

    def __init__(
        self, notifier: Callable[[], SlackNotifier], settings: Settings, live: LiveMessages, *, zone: str = "UTC"
    ) -> None:
        self.notifier, self.settings, self.live = notifier, settings, live
        self.zone = zone  # the team's: a time's fallback text

    def warn(self, resource: Resource, decision: Decision, price: Price, now: datetime) -> None:
        owner = resource.owner(self.settings.owner_tag_key)
        who = self.person(owner)
        part = warning(resource, decision, price, who, now, zone=self.zone, whose=whose(who))
        message = Live((replace(part, marker=_marker(resource, now)),))
        self.live.record([(self.tell(owner, message.message()), message)], now)

    def act(self, resource: Resource, decision: Decision, price: Price, now: datetime) -> Where | None:
        """Told before it is done; where its warning is (changed once it is done), if it is kept."""
        owner = resource.owner(self.settings.owner_tag_key)
        part = replace(
            act_notice(resource, decision, price, self.person(owner), now, self.zone), marker=_marker(resource, now)
        )
        warned_in = self.live.where([resource.key]).get(resource.key)
        if warned_in is not None:  # a reply under the warning, which offers its undo once done
            self.notifier().post(
                warned_in[0], Live((told_above(part),)).message(), thread_ts=warned_in[1], broadcast=True
            )
        else:
            self.live.record([(self.tell(owner, Live((part,)).message()), Live((part,)))], now)
        return warned_in

    def tell(self, owner: str, message: Message) -> Delivery:
        """To the resource's owner, or the alerts channel when Slack cannot reach them (or there is none)."""
        email = owner_email(owner, self.settings.email_domain) if owner else None
        return self.notifier().send_to_owner(email, message, fallback_channel=self.settings.alerts_channel, owner=owner)

    def person(self, owner: str) -> Mrkdwn:
        """An owner as a message names them: by mention where Slack knows them, else by name."""
        email = owner_email(owner, self.settings.email_domain) if owner else None
        return person(owner, self.notifier().user_id_for(email) if email else None)


def whose(who: Mrkdwn) -> str:
    """Whose clock a keep "until tomorrow 09:00" reads: the owner's (their Slack zone), else the team's."""
    return "your time" if who.startswith("<@") else "team time"


def _marker(resource: Resource, now: datetime) -> str:
    """The block id of a resource's part of a message: which resource, and when it was told."""
    return f"cg-sm-{resource.key}-{now:%Y%m%dT%H%M%S}"[:255]
