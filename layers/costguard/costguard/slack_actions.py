"""Buttons on costguard's Slack messages: keep, snooze or stop a machine from the warning itself.

The HTTP side (verify the signature, queue the click, answer Slack within 3 s) is in the handler; this
is the work done from the queue: who may act, what the button does, once, and the reply that updates
the original message to show who did what.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qs
from zoneinfo import ZoneInfo

from botocore.exceptions import ClientError

from costguard import tags
from costguard.aws import error_code
from costguard.ec2 import Ec2
from costguard.errors import EventValidationError
from costguard.idle import is_accelerated
from costguard.ledger import Action as LedgerAction
from costguard.ledger import Ledger
from costguard.observability import logger
from costguard.ownership import owner_email
from costguard.settings import IdlePolicy, Mode
from costguard.slack.blocks import Block, button, context, escape
from costguard.slack.notifier import SlackNotifier

KEEP_HOURS = 2
MORNING_HOUR = 9


class Button(StrEnum):
    KEEP_2H = "costguard.keep_2h"
    KEEP_TOMORROW = "costguard.keep_tomorrow"
    KEEP_MONDAY = "costguard.keep_monday"
    STOP_NOW = "costguard.stop_now"
    START = "costguard.start"


KEEPS = (Button.KEEP_2H, Button.KEEP_TOMORROW, Button.KEEP_MONDAY)


@dataclass(frozen=True)
class Click:
    """One verified button press, as queued for the worker."""

    button: Button
    instance_id: str
    region: str
    user_id: str
    user_name: str
    response_url: str
    message_ts: str
    action_ts: str
    blocks: tuple[Any, ...] = ()

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "button": self.button.value})

    @classmethod
    def from_json(cls, raw: str) -> Click:
        data = json.loads(raw)
        data["button"] = Button(data["button"])
        data["blocks"] = tuple(data.get("blocks") or ())
        return cls(**data)


# ------------------------------------------------------------------ building the buttons


def button_value(instance_id: str, region: str) -> str:
    return json.dumps({"i": instance_id, "r": region}, separators=(",", ":"))


def warning_buttons(instance_id: str, region: str, will_stop: bool) -> list[Block]:
    value = button_value(instance_id, region)
    elements = [
        button("Keep 2 h", Button.KEEP_2H, value, style="primary"),
        button("Keep until tomorrow 09:00", Button.KEEP_TOMORROW, value),
        button("Keep until Monday", Button.KEEP_MONDAY, value),
    ]
    if will_stop:
        stop = dict(button("Stop now", Button.STOP_NOW, value, style="danger"))
        stop["confirm"] = {
            "title": {"type": "plain_text", "text": "Stop this machine?"},
            "text": {"type": "mrkdwn", "text": f"`{instance_id}` will be stopped now. Its EBS volumes are kept."},
            "confirm": {"type": "plain_text", "text": "Stop it"},
            "deny": {"type": "plain_text", "text": "Cancel"},
        }
        elements.append(stop)
    return elements


def start_buttons(instance_id: str, region: str) -> list[Block]:
    return [button("Start it again", Button.START, button_value(instance_id, region), style="primary")]


# ------------------------------------------------------------------ reading a click


def parse_interaction(body: str) -> Click | None:
    """Slack's form-encoded `payload=` JSON → the costguard button pressed, or None for anything else."""
    try:
        payload = json.loads(parse_qs(body, strict_parsing=True)["payload"][0])
    except (KeyError, ValueError, IndexError) as exc:
        raise EventValidationError(f"not a Slack interaction payload: {exc}") from None
    if payload.get("type") != "block_actions":
        return None
    actions = payload.get("actions") or []
    action = next((a for a in actions if str(a.get("action_id", "")).startswith("costguard.")), None)
    if action is None:
        return None
    try:
        pressed = Button(action["action_id"])
        target = json.loads(action.get("value") or "{}")
        instance_id, region = str(target["i"]), str(target["r"])
    except (ValueError, KeyError, TypeError) as exc:
        raise EventValidationError(f"costguard button with a bad value: {exc}") from None
    user = payload.get("user") or {}
    message = payload.get("message") or {}
    if not user.get("id") or not payload.get("response_url"):
        raise EventValidationError("interaction without user or response_url")
    return Click(
        button=pressed,
        instance_id=instance_id,
        region=region,
        user_id=str(user["id"]),
        user_name=str(user.get("username") or user.get("name") or user["id"]),
        response_url=str(payload["response_url"]),
        message_ts=str(message.get("ts") or (payload.get("container") or {}).get("message_ts") or ""),
        action_ts=str(action.get("action_ts", "")),
        blocks=tuple(message.get("blocks") or ()),
    )


def keep_until(pressed: Button, clicked_at: datetime, zone: ZoneInfo) -> datetime:
    """When a keep button's protection ends: 2 h from now, tomorrow 09:00 or next Monday 09:00, local time."""
    if pressed is Button.KEEP_2H:
        return clicked_at + timedelta(hours=KEEP_HOURS)
    local = clicked_at.astimezone(zone)
    days = 1 if pressed is Button.KEEP_TOMORROW else (7 - local.weekday()) or 7
    morning = (local + timedelta(days=days)).replace(hour=MORNING_HOUR, minute=0, second=0, microsecond=0)
    return morning.astimezone(clicked_at.tzinfo)


# ------------------------------------------------------------------ doing it


@dataclass(frozen=True)
class Outcome:
    status: str  # "done", "refused", "duplicate", "gone", "dry-run"
    text: str


Responder = Callable[[str, Mapping[str, Any]], None]


@dataclass
class ActionWorker:
    ec2_for: Callable[[str], Ec2]
    notifier: SlackNotifier
    ledger: Ledger
    respond: Responder
    policy: IdlePolicy
    mode: Mode
    owner_tag_key: str
    email_domain: str
    admins: Sequence[str]
    zone: ZoneInfo

    def handle(self, click: Click, now: datetime) -> Outcome:
        ec2 = self.ec2_for(click.region)
        found = ec2.describe([click.instance_id])
        if not found or not is_accelerated(found[0].instance_type, self.policy):
            return self._tell(click, Outcome("gone", f"`{click.instance_id}` is not a GPU instance costguard governs."))
        instance = found[0]
        owner = instance.owner(self.owner_tag_key)
        if not self._may_act(click.user_id, owner):
            text = f"Only the owner ({escape(owner or 'unknown')}) or a costguard admin can do that."
            return self._tell(click, Outcome("refused", text))
        key = f"slack-action:{click.instance_id}:{click.message_ts}:{click.button.value}"
        if not self.ledger.claim(key, now, ttl=timedelta(days=7)):
            return self._tell(click, Outcome("duplicate", "That was done already."))
        try:
            outcome = self._apply(ec2, click, instance.hibernation_configured, now)
            if outcome.status == "done":
                self._record(click, instance.instance_type, owner, now)
                self._update_original(click, outcome.text)
            else:
                self._tell(click, outcome)
        except Exception:
            self.ledger.release(key)  # the retry from the queue must be able to do it
            raise
        return outcome

    def _may_act(self, user_id: str, owner: str) -> bool:
        if user_id in self.admins:
            return True
        for group in (a for a in self.admins if a.startswith("S")):
            if user_id in self.notifier.group_members(group):
                return True
        email = owner_email(owner, self.email_domain) if owner else None
        return bool(email) and self.notifier.user_id_for(email or "") == user_id

    def _apply(self, ec2: Ec2, click: Click, hibernate: bool, now: datetime) -> Outcome:
        who = f"<@{click.user_id}>"
        iid = f"`{click.instance_id}`"
        if click.button in KEEPS:
            until = keep_until(click.button, now, self.zone)
            local = until.astimezone(self.zone)
            applied = ec2.create_tags(
                [click.instance_id],
                {tags.KEEP_UNTIL: tags.format_time(until), tags.KEPT_BY: tags.clip(click.user_name)},
            )
            ec2.delete_tags([click.instance_id], tags.WARNING_TAGS)
            text = f"{who} kept {iid} until {local:%a %d %b %H:%M} ({self.zone.key})."
        elif click.button is Button.STOP_NOW:
            if self.mode is Mode.NOTIFY_ONLY:
                return Outcome(
                    "refused", "costguard is in notify-only mode and stops nothing; stop it from the console or CLI."
                )
            applied = ec2.stop([click.instance_id], hibernate=hibernate)
            if applied:
                ec2.create_tags(
                    [click.instance_id],
                    {
                        tags.STOPPED_AT: tags.format_time(now),
                        tags.STOP_REASON: tags.clip(f"stopped from Slack by {click.user_name}"),
                    },
                )
            text = f"{who} {'hibernated' if hibernate else 'stopped'} {iid}."
        else:
            try:
                applied = ec2.start(click.instance_id)
            except ClientError as exc:
                code = error_code(exc)
                return Outcome("refused", f"AWS would not start it: {code}.")
            text = f"{who} started {iid} again."
        if not applied:
            return Outcome("dry-run", f"dry-run: costguard changed nothing. It would have done this: {text}")
        return Outcome("done", text)

    def _record(self, click: Click, instance_type: str, owner: str, now: datetime) -> None:
        kind = {Button.STOP_NOW: "stop-from-slack", Button.START: "start-from-slack"}.get(click.button, "keep")
        self.ledger.record(
            LedgerAction(
                at=now,
                kind=kind,
                instance_id=click.instance_id,
                region=click.region,
                mode=self.mode.value,
                owner=owner,
                instance_type=instance_type,
                reason=f"{click.button.value} by {click.user_name}",
            )
        )

    def _update_original(self, click: Click, text: str) -> None:
        """The original message, its buttons replaced by who did what."""
        kept = [b for b in click.blocks if b.get("type") != "actions"]
        blocks = [*kept, context(f":white_check_mark: {text}")]
        self.respond(click.response_url, {"replace_original": True, "text": text, "blocks": blocks})
        logger.info("slack action done", instance_id=click.instance_id, button=click.button.value, user=click.user_id)

    def _tell(self, click: Click, outcome: Outcome) -> Outcome:
        """An ephemeral answer to the person who clicked; the message stays as it was."""
        self.respond(
            click.response_url, {"response_type": "ephemeral", "replace_original": False, "text": outcome.text}
        )
        logger.info("slack action not done", instance_id=click.instance_id, status=outcome.status, user=click.user_id)
        return outcome
