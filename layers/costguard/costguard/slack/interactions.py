"""Slack's interactivity payloads: a button press on a costguard message, read and checked. Pure."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import parse_qs

from costguard.core.errors import EventValidationError
from costguard.slack.buttons import Button


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
