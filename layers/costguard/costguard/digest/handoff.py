"""A member account's week, handed to the organization's hub: what the hub's digest shows of it. Pure.

The hub never reads a member's machines: each member's weekly digest sends this small summary (a
few kilobytes, whatever the fleet's size) to the hub's figures queue. The hub takes it as untrusted
input from another account: every field is checked for its type and bounds, text is cut, numbers
must be finite and not negative, and an account it does not expect is refused.

Format: JSON, `{"v": 1, "kind": "costguard.week", ...}`; a version the hub does not know is refused.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from costguard.core import shapes
from costguard.core.errors import EventValidationError

KIND = "costguard.week"
VERSION = 1
ACCOUNT = re.compile(r"^[0-9]{12}$")
MAX_BODY = 64 * 1024
TOP_OWNERS = 5
MAX_DAYS = 8
MAX_GAPS = 5
MAX_NUMBER = 1e12
MAX_BASIS = 400


@dataclass(frozen=True)
class OwnerWaste:
    owner: str
    idle_gpu_hours: float
    waste_usd: float


@dataclass(frozen=True)
class AccountWeek:
    """One account's week as its own digest counted it."""

    account: str
    label: str  # what the organization calls the account ("training"), or ""
    start: datetime
    end: datetime
    regions: tuple[str, ...]
    machines: int
    gpu_hours: float
    idle_gpu_hours: float
    waste_usd: float
    avg_gpu_util: float | None
    warned: int
    stopped: int
    kept: int
    saved_hours: float
    saved_usd: float
    spend_usd: float | None
    days: tuple[tuple[date, float, float], ...]  # used and idle GPU-hours, day by day
    top_owners: tuple[OwnerWaste, ...]
    gaps: tuple[str, ...]  # what the account's digest could not read this week
    # Since the digest priced idle hours on the bill (issue 32); a hand-off from before has none of them.
    paid_idle_hours: float = 0.0  # idle hours on capacity already paid (not in waste_usd)
    saved_list_usd: float | None = None  # the stops' hours at the on-demand price, beside saved_usd
    basis: str = ""  # the line that names the price basis

    @property
    def name(self) -> str:
        return f"{self.label} ({self.account})" if self.label else self.account


def encode(week: AccountWeek) -> str:
    body = {
        "v": VERSION,
        "kind": KIND,
        "account": week.account,
        "label": week.label,
        "start": week.start.isoformat(),
        "end": week.end.isoformat(),
        "regions": list(week.regions),
        "machines": week.machines,
        "gpu_hours": round(week.gpu_hours, 3),
        "idle_gpu_hours": round(week.idle_gpu_hours, 3),
        "waste_usd": round(week.waste_usd, 2),
        "avg_gpu_util": None if week.avg_gpu_util is None else round(week.avg_gpu_util, 2),
        "warned": week.warned,
        "stopped": week.stopped,
        "kept": week.kept,
        "saved_hours": round(week.saved_hours, 3),
        "saved_usd": round(week.saved_usd, 2),
        "spend_usd": None if week.spend_usd is None else round(week.spend_usd, 2),
        "days": [[d.isoformat(), round(used, 3), round(idle, 3)] for d, used, idle in week.days],
        "top_owners": [[o.owner, round(o.idle_gpu_hours, 3), round(o.waste_usd, 2)] for o in week.top_owners],
        "gaps": [g[:200] for g in week.gaps],
        "paid_idle_hours": round(week.paid_idle_hours, 3),
        "saved_list_usd": None if week.saved_list_usd is None else round(week.saved_list_usd, 2),
        "basis": week.basis[:MAX_BASIS],
    }
    return json.dumps(body, separators=(",", ":"))


def decode(body: str) -> AccountWeek:
    """The week in a hand-off, or EventValidationError naming the first field that is not as it must be."""
    if len(body) > MAX_BODY:
        raise EventValidationError(f"a hand-off of {len(body)} characters (at most {MAX_BODY})")
    try:
        raw = json.loads(body)
    except json.JSONDecodeError as exc:
        raise EventValidationError(f"a hand-off that is not JSON ({exc.msg})") from None
    except RecursionError:
        raise EventValidationError("a hand-off nested too deep to read") from None
    top = shapes.obj(raw, "hand-off")
    if top.get("v") != VERSION or top.get("kind") != KIND:
        raise EventValidationError(f"a hand-off of kind {str(top.get('kind'))[:40]!r} version {top.get('v')!r}")
    where = "hand-off"
    return AccountWeek(
        account=shapes.text(top, "account", where, pattern=ACCOUNT),
        label=shapes.optional_text(top, "label", where, limit=64),
        start=_time(top, "start"),
        end=_time(top, "end"),
        regions=tuple(shapes.region(r, f"{where}.regions[]") for r in _list(top, "regions", 40)),
        machines=int(_number(top, "machines", integer=True)),
        gpu_hours=_number(top, "gpu_hours"),
        idle_gpu_hours=_number(top, "idle_gpu_hours"),
        waste_usd=_number(top, "waste_usd"),
        avg_gpu_util=_optional_number(top, "avg_gpu_util"),
        warned=int(_number(top, "warned", integer=True)),
        stopped=int(_number(top, "stopped", integer=True)),
        kept=int(_number(top, "kept", integer=True)),
        saved_hours=_number(top, "saved_hours"),
        saved_usd=_number(top, "saved_usd"),
        spend_usd=_optional_number(top, "spend_usd"),
        days=tuple(_day(d, i) for i, d in enumerate(_list(top, "days", MAX_DAYS))),
        top_owners=tuple(_owner(o, i) for i, o in enumerate(_list(top, "top_owners", TOP_OWNERS))),
        gaps=tuple(_cut_text(g, f"{where}.gaps[{i}]", 200) for i, g in enumerate(_list(top, "gaps", MAX_GAPS))),
        paid_idle_hours=_optional_number(top, "paid_idle_hours") or 0.0,
        saved_list_usd=_optional_number(top, "saved_list_usd"),
        basis=_cut_text(top.get("basis", ""), f"{where}.basis", MAX_BASIS),
    )


def _list(top: Mapping[str, Any], key: str, limit: int) -> list[Any]:
    values = list(shapes.items(top.get(key), f"hand-off.{key}"))
    if len(values) > limit:
        raise EventValidationError(f"hand-off.{key} has {len(values)} entries (at most {limit})")
    return values


def _time(top: Mapping[str, Any], key: str) -> datetime:
    value = shapes.text(top, key, "hand-off", limit=40)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise EventValidationError(f"hand-off.{key} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise EventValidationError(f"hand-off.{key} has no time zone")
    return moment


def _number(top: Mapping[str, Any], key: str, *, integer: bool = False) -> float:
    return _checked_number(top.get(key), f"hand-off.{key}", integer=integer)


def _optional_number(top: Mapping[str, Any], key: str) -> float | None:
    value = top.get(key)
    return None if value is None else _checked_number(value, f"hand-off.{key}")


def _checked_number(value: Any, where: str, *, integer: bool = False) -> float:
    # bool is an int to Python; a hand-off's `true` is not a count.
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise EventValidationError(f"{where} is {shapes.kind(value)}, not a {'whole ' if integer else ''}number")
    if not math.isfinite(value) or not 0 <= value <= MAX_NUMBER:
        raise EventValidationError(f"{where} is {value!r}: not between 0 and {MAX_NUMBER:.0e}")
    return float(value)


def _cut_text(value: Any, where: str, limit: int) -> str:
    if not isinstance(value, str):
        raise EventValidationError(f"{where} is {shapes.kind(value)}, not a string")
    return value[:limit]


def _day(value: Any, index: int) -> tuple[date, float, float]:
    where = f"hand-off.days[{index}]"
    row = shapes.items(value, where)
    if len(row) != 3:
        raise EventValidationError(f"{where} is not [day, used, idle]")
    try:
        day = date.fromisoformat(_cut_text(row[0], where, 10))
    except ValueError:
        raise EventValidationError(f"{where} has no ISO day") from None
    return day, _checked_number(row[1], f"{where}[1]"), _checked_number(row[2], f"{where}[2]")


def _owner(value: Any, index: int) -> OwnerWaste:
    where = f"hand-off.top_owners[{index}]"
    row = shapes.items(value, where)
    if len(row) != 3:
        raise EventValidationError(f"{where} is not [owner, idle GPU-hours, waste]")
    return OwnerWaste(_cut_text(row[0], where, 256), _checked_number(row[1], where), _checked_number(row[2], where))
