"""What a person reads in a costguard message: Slack's date tokens as their fallback text. For tests' assertions
on wording, independent of the reader's zone."""

from __future__ import annotations

import json
import re
from typing import Any

_DATE = re.compile(r"<!date\^(\d+)\^[^|>]*\|([^>]*)>")


def as_read(said: Any) -> str:
    """A message's text, its blocks, or any part of them (a dict, a list), with each date as its fallback."""
    text = said if isinstance(said, str) else json.dumps(said, default=str, ensure_ascii=False)
    return _DATE.sub(lambda found: found[2], text)


def dates_in(said: Any) -> list[int]:
    """The times (epoch seconds) of the Slack dates in a message, in order."""
    text = said if isinstance(said, str) else json.dumps(said, default=str)
    return [int(found[1]) for found in _DATE.finditer(text)]


def marked(message: Any, kind: str) -> list[str]:
    """The block ids of a message's parts that tell of `kind` ("warn", "stop", "cancel"): `cg-<kind>-<machine>-…`,
    the marker that proves a notice's delivery (idle/acts/delivery.py)."""
    return [str(b["block_id"]) for b in message.blocks if str(b.get("block_id", "")).startswith(f"cg-{kind}-")]


def notices(messages: Any, kind: str) -> list[Any]:
    """The messages posted that carry notices of `kind` (a warning changed in place since still carries its own)."""
    return [m for m in messages if marked(m, kind)]


# A time or a day a person reads as written, in no one's zone but the writer's: a clock time ("12:50", "9:17 AM",
# "03:05:00"), a calendar date ("2026-11-16", "23/11/26", "16 Nov", "Nov 16", "Mon 16"). In a costguard message
# each must be a Slack date (its fallback, which names its zone, is where Slack cannot show the reader's own).
# Not looked at: a month ("November 2026") and a duration ("3 h 25 min"), which are not moments; code (`...`,
# ```...```), which quotes a value as it is written (a tag value to copy, AWS's own notification); a button's or
# a menu option's label, which Slack shows as plain text only (the Keeps name the zone of their clock: "Keep
# until 09:00 tomorrow (your time)").
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_PLAIN_TIME = re.compile(
    r"(?<![\d:.])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\d:])"  # a clock time
    r"|(?<![\d-])\d{4}-\d{2}-\d{2}(?![\d])"  # an ISO date
    r"|(?<![\d/])\d{1,2}/\d{1,2}/\d{2}(?:\d{2})?(?![\d/])"  # 23/11/26
    rf"|\b\d{{1,2}} {_MONTH}(?![a-z])"  # 16 Nov
    rf"|\b{_MONTH} \d{{1,2}}\b"  # Nov 16
    rf"|\b{_WEEKDAY} \d{{1,2}}\b"  # Mon 16
)
_SHOWN_LINK = re.compile(r"<(?:https?|mailto):[^|>]*\|([^>]*)>|<(?:https?|mailto):[^>]*>|<[@#!][^>]*>")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_NEVER_SHOWN = ("value", "action_id", "block_id", "url", "image_url")


def shown_texts(payload: Any) -> list[str]:
    """What a reader sees of a message (a post, an edit, a reply: a payload as sent to Slack), but the labels of
    buttons and menu options: its text, and the text of its blocks' parts (sections, fields, context lines, headers)."""
    found: list[str] = []
    if isinstance(payload, dict):
        if isinstance(payload.get("text"), str) and payload.get("type") in (None, "mrkdwn", "plain_text"):
            found.append(payload["text"])
        label = ("text",) if "value" in payload else ()  # a button's, or a menu option's
        for key, value in payload.items():
            if key not in (*_NEVER_SHOWN, *label) and (key != "text" or isinstance(value, dict)):
                found += shown_texts(value)
    elif isinstance(payload, list):
        for item in payload:
            found += shown_texts(item)
    return found


def plain_times(payload: Any) -> list[str]:
    """The times and days a message shows as plain text, each with a little of what is around it (none: every
    one is a Slack date, shown in each reader's own zone). A Slack date's fallback is not looked at."""
    out = []
    for text in shown_texts(payload):
        seen = _SHOWN_LINK.sub(lambda found: found[1] or "", _CODE.sub("`…`", _DATE.sub("", text)))
        out += [repr(seen[max(0, f.start() - 40) : f.end() + 20]) for f in _PLAIN_TIME.finditer(seen)]
    return out


def plain_times_in(said: Any) -> list[str]:
    """`plain_times` of each message said (a Slack stand-in's `said`: (how, payload) pairs), naming how it went."""
    return [f"{how}: {where}" for how, payload in said for where in plain_times(payload)]
