"""Reading an event at the edge: each field checked for its type, or EventValidationError naming it.

Pure. A parser asks for what it needs (`obj`, `text`, `optional_text`, `items`) and gets that type or
a refusal that says where and what was found, never a KeyError or an AttributeError from deeper in,
and never `str()` of a list turned into an owner. `shape` describes an event for the log without
its values (no tag, name or secret is logged from a refused event).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from costguard.core.errors import EventValidationError

# AWS's format: `i-` and 8 (accounts from before 2016) or 17 lowercase letters and digits. AWS's own
# samples write `i-xxxxxxxx`, so the alphabet is not narrowed to the hexadecimal digits real ids use.
INSTANCE_ID = re.compile(r"^i-(?:[0-9a-z]{8}|[0-9a-z]{17})\Z")
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")


def obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise EventValidationError(f"{where} is {kind(value)}, not an object")
    return value


def optional_obj(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """An object that may be missing or null (then empty), but is never another type."""
    value = parent.get(key)
    return {} if value is None else obj(value, f"{where}.{key}")


def text(
    parent: Mapping[str, Any], key: str, where: str, *, pattern: re.Pattern[str] | None = None, limit: int = 2048
) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise EventValidationError(f"{where}.{key} is {kind(value)}, not a non-empty string")
    return _checked(value, f"{where}.{key}", pattern, limit)


def optional_text(parent: Mapping[str, Any], key: str, where: str, *, limit: int = 2048) -> str:
    """A string that may be missing, null or empty (then ""), but is never another type."""
    value = parent.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise EventValidationError(f"{where}.{key} is {kind(value)}, not a string")
    return _checked(value, f"{where}.{key}", None, limit)


def items(value: Any, where: str) -> Sequence[Any]:
    """A list that may be missing or null (then empty), but is never another type."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise EventValidationError(f"{where} is {kind(value)}, not a list")
    return value


def instance_id(value: Any, where: str) -> str:
    if not isinstance(value, str) or not INSTANCE_ID.match(value):
        raise EventValidationError(f"{where} is {kind(value)}, not an instance id (i- and 8 or 17 letters and digits)")
    return value


def region(value: Any, where: str) -> str:
    if not isinstance(value, str) or not REGION.match(value):
        raise EventValidationError(f"{where} is {kind(value)}, not an AWS region")
    return value


def shape(value: Any, depth: int = 4) -> Any:
    """The event's keys and types, no values: what a refused event looked like, safe to log."""
    if isinstance(value, Mapping):
        if depth == 0:
            return "{…}"
        return {str(k)[:40]: shape(v, depth - 1) for k, v in list(value.items())[:30]}
    if isinstance(value, list):
        if depth == 0 or not value:
            return f"list[{len(value)}]"
        return [shape(value[0], depth - 1), f"…{len(value)} items"] if len(value) > 1 else [shape(value[0], depth - 1)]
    if isinstance(value, str):
        return f"str[{len(value)}]"
    return type(value).__name__


def _checked(value: str, where: str, pattern: re.Pattern[str] | None, limit: int) -> str:
    if len(value) > limit:
        raise EventValidationError(f"{where} is {len(value)} characters long (at most {limit})")
    if pattern is not None and not pattern.match(value):
        raise EventValidationError(f"{where} {value[:40]!r} is not of the expected form")
    return value


def kind(value: Any) -> str:
    if value is None:
        return "missing"
    if isinstance(value, str):
        return "an empty string" if not value else f"a string of {len(value)} characters"
    return f"a {type(value).__name__}"
