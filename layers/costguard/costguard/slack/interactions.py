"""Slack's interactivity payloads: a button press on a costguard message, read and checked. Pure."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import parse_qs

from costguard.core import formatting, shapes
from costguard.core.errors import EventValidationError
from costguard.core.sagemaker import NAME, check_key
from costguard.slack.buttons import MENU, Button


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
    account: str = ""  # the machine's account; "" on buttons from before accounts: the receiver's own
    start_at: str = ""  # "Stop now" on a warning that promised a learned start: when (ISO 8601, UTC)
    # "instance" for an EC2 machine (then instance_id is its id); a SageMaker kind (notebook, endpoint, app),
    # then instance_id is the resource's name, and config an endpoint's configuration.
    kind: str = "instance"
    config: str = ""
    decided: str = ""  # *Why?*: when the decision it asks about was made (ISO 8601)
    channel: str = ""  # the channel of the message it came from (a *Why?* answers in its thread)

    @property
    def sagemaker(self) -> bool:
        return self.kind != "instance"

    @property
    def key(self) -> str:
        """What the click is about, as costguard's messages key it: an instance id, or a SageMaker kind/name."""
        return f"{self.kind}/{self.instance_id}" if self.sagemaker else self.instance_id

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "button": self.button.value})

    @classmethod
    def from_json(cls, raw: Any) -> Click:
        """A queued click, checked field by field as it was when it was queued."""
        if not isinstance(raw, str):
            raise EventValidationError(f"queued click is a {type(raw).__name__}, not JSON text")
        try:
            data = shapes.obj(json.loads(raw), "queued click")
        except ValueError as exc:
            raise EventValidationError(f"queued click is not JSON: {exc}") from None
        kind, name, config = _target(data, "kind", "instance_id", "config", "click")
        return cls(
            button=_button(data.get("button")),
            instance_id=name,
            region=shapes.region(data.get("region"), "click.region"),
            user_id=shapes.text(data, "user_id", "click", pattern=USER_ID),
            user_name=shapes.text(data, "user_name", "click", limit=256),
            response_url=shapes.text(data, "response_url", "click", pattern=RESPONSE_URL),
            message_ts=shapes.optional_text(data, "message_ts", "click", limit=40),
            action_ts=shapes.optional_text(data, "action_ts", "click", limit=40),
            blocks=_blocks(data.get("blocks"), "click.blocks"),
            account=_account(data.get("account"), "click.account"),
            start_at=_time(data.get("start_at"), "click.start_at"),
            kind=kind,
            config=config,
            decided=_time(data.get("decided"), "click.decided"),
            channel=_channel(data.get("channel")),
        )


USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")
RESPONSE_URL = re.compile(r"^https?://[^\s]+$")
ACCOUNT_ID = re.compile(r"^\d{12}$")


def parse_interaction(body: str) -> Click | None:
    """Slack's form-encoded `payload=` JSON → the costguard button pressed, or None for anything else.
    Every field is checked for its type: a payload that is not what Slack documents is refused."""
    try:
        payload = json.loads(parse_qs(body, strict_parsing=True)["payload"][0])
    except (KeyError, ValueError, IndexError) as exc:
        raise EventValidationError(f"not a Slack interaction payload: {exc}") from None
    payload = shapes.obj(payload, "payload")
    if payload.get("type") != "block_actions":
        return None
    actions = [shapes.obj(a, "payload.actions[]") for a in shapes.items(payload.get("actions"), "payload.actions")]
    action = next((a for a in actions if str(a.get("action_id", "")).startswith("costguard.")), None)
    if action is None:
        return None
    if action.get("action_id") == MENU:  # a choice in a machine's menu: the option carries the button
        chosen = shapes.obj(action.get("selected_option"), "action.selected_option")
        action = {**action, "value": chosen.get("value")}
    try:
        target = shapes.obj(json.loads(shapes.text(action, "value", "action", limit=400)), "action.value")
    except ValueError as exc:
        raise EventValidationError(f"costguard button with a bad value: {exc}") from None
    pressed = _button(target.get("b") if action.get("action_id") == MENU else action.get("action_id"))
    user = shapes.obj(payload.get("user"), "payload.user")
    message = shapes.optional_obj(payload, "message", "payload")
    container = shapes.optional_obj(payload, "container", "payload")
    user_id = shapes.text(user, "id", "payload.user", pattern=USER_ID)
    name = shapes.optional_text(user, "username", "payload.user", limit=256)
    if "k" in target:
        kind, resource, config = _target(target, "k", "n", "c", "action.value")
    else:
        kind, resource, config = "instance", shapes.instance_id(target.get("i"), "action.value.i"), ""
    return Click(
        button=pressed,
        instance_id=resource,
        region=shapes.region(target.get("r"), "action.value.r"),
        user_id=user_id,
        user_name=name or shapes.optional_text(user, "name", "payload.user", limit=256) or user_id,
        response_url=shapes.text(payload, "response_url", "payload", pattern=RESPONSE_URL),
        message_ts=shapes.optional_text(message, "ts", "payload.message", limit=40)
        or shapes.optional_text(container, "message_ts", "payload.container", limit=40),
        action_ts=shapes.optional_text(action, "action_ts", "action", limit=40),
        blocks=_blocks(message.get("blocks"), "payload.message.blocks"),
        account=_account(target.get("a"), "action.value.a"),
        start_at=_time(target.get("s"), "action.value.s"),
        kind=kind,
        config=config,
        decided=_time(target.get("w"), "action.value.w"),
        channel=_channel(container.get("channel_id") or shapes.optional_obj(payload, "channel", "payload").get("id")),
    )


def _target(data: Any, kind_key: str, name_key: str, config_key: str, where: str) -> tuple[str, str, str]:
    """(kind, instance id or SageMaker name, endpoint configuration), each checked for its form."""
    kind = data.get(kind_key) or "instance"
    if kind == "instance":
        return "instance", shapes.instance_id(data.get(name_key), f"{where}.{name_key}"), ""
    parsed, name = check_key(str(kind), shapes.text(data, name_key, where, limit=300), f"{where}.{name_key}")
    config = shapes.optional_text(data, config_key, where, limit=80)
    if config and not NAME.match(config):
        raise EventValidationError(f"{where}.{config_key} is not an endpoint configuration name")
    return parsed.value, name, config


def _button(value: Any) -> Button:
    try:
        return Button(value)
    except ValueError:
        raise EventValidationError(f"{str(value)[:60]!r} is not a costguard button") from None


def _account(value: Any, where: str) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not ACCOUNT_ID.match(value):
        raise EventValidationError(f"{where} is not an account id (12 digits)")
    return value


CHANNEL_ID = re.compile(r"^[CDGU][A-Z0-9]{2,20}$")  # a DM posted to its person's id answers in that DM


def _channel(value: Any) -> str:
    """The message's channel, where it reads as one; "" otherwise (a Why? then answers the person alone): a
    click is never refused for it."""
    if isinstance(value, str) and CHANNEL_ID.match(value):
        return value
    return ""


def _time(value: Any, where: str) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or len(value) > 40 or formatting.parse_time(value) is None:
        raise EventValidationError(f"{where} is not a time (ISO 8601)")
    return value


def _blocks(value: Any, where: str) -> tuple[Any, ...]:
    return tuple(shapes.obj(b, f"{where}[]") for b in shapes.items(value, where))
