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
