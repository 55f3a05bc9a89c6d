"""A member account's week, handed to the organization's hub: what the hub's digest shows of it, and what
its owners are to be told. Pure.

The hub never reads a member's machines: each member's weekly digest sends this small summary (a
few kilobytes, whatever the fleet's size) to the hub's figures queue, and after it its owners' weeks
(digest/owners.py), a few dozen owners a message, so that the hub sends each person one direct message
with every account's part (a person with machines in two accounts used to get two). The hub takes both
as untrusted input from another account: every field is checked for its type and bounds, text is cut,
numbers must be finite and not negative, and an account it does not expect is refused.

Format: JSON, `{"v": 1, "kind": "costguard.week", ...}` and `{"v": 1, "kind": "costguard.owners", "part": k,
"parts": n, ...}`; a version or kind the hub does not know is refused. The week says how many owner
parts follow (`owner_parts`, absent from a member that still messages its owners itself).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from costguard.core import shapes
from costguard.core.errors import EventValidationError
from costguard.digest.owners import IdleMachine, KeptIdle, OwnerWeek, RefusedStart, Suggestion

KIND = "costguard.week"
OWNERS_KIND = "costguard.owners"
MAX_OWNER_PARTS = 100  # 64 KB each: a few thousand owners
SHOWN = 3  # lines of each kind an owner's week carries (digest/owners.py shows as many)
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
    # Since issue 34: each day's idle cost (for the chart's dollars), and how many owner parts follow.
    days_usd: tuple[tuple[date, float], ...] = ()
    owner_parts: int | None = None  # None: the member messages its own owners

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
        "days_usd": [[d.isoformat(), round(usd, 2)] for d, usd in week.days_usd],
    }
    if week.owner_parts is not None:
        body["owner_parts"] = week.owner_parts
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
        days_usd=tuple(_day_usd(d, i) for i, d in enumerate(_list(top, "days_usd", MAX_DAYS))),
        owner_parts=None if top.get("owner_parts") is None else int(_parts(top, "owner_parts")),
    )


def kind_of(body: str) -> str:
    """What a hand-off holds ("costguard.week", "costguard.owners"), read cheaply before it is decoded;
    "" when it says nothing readable (decode then says why)."""
    try:
        top = json.loads(body) if len(body) <= MAX_BODY else None
    except (json.JSONDecodeError, RecursionError):
        return ""
    return str(top.get("kind", ""))[:40] if isinstance(top, dict) else ""


def _parts(top: Mapping[str, Any], key: str) -> float:
    value = _number(top, key, integer=True)
    if value > MAX_OWNER_PARTS:
        raise EventValidationError(f"hand-off.{key} is {value:.0f} (at most {MAX_OWNER_PARTS})")
    return value


def _day_usd(value: Any, index: int) -> tuple[date, float]:
    where = f"hand-off.days_usd[{index}]"
    row = shapes.items(value, where)
    if len(row) != 2:
        raise EventValidationError(f"{where} is not [day, idle USD]")
    return _iso_day(row[0], where), _checked_number(row[1], f"{where}[1]")


def _iso_day(value: Any, where: str) -> date:
    try:
        return date.fromisoformat(_cut_text(value, where, 10))
    except ValueError:
        raise EventValidationError(f"{where} has no ISO day") from None


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


# ------------------------------------------------------------------------------------------- owners' weeks
@dataclass(frozen=True)
class OwnersPart:
    """Part k of n of an account's owners' weeks, as its weekly digest handed them over."""

    account: str
    label: str
    start: datetime
    end: datetime
    part: int
    parts: int
    owners: tuple[OwnerWeek, ...]


def encode_owners(account: str, label: str, start: datetime, end: datetime, owners: list[OwnerWeek]) -> list[str]:
    """The owners' weeks in as few hand-offs as fit MAX_BODY each (at most MAX_OWNER_PARTS; the owners past
    them, the least to act on, are left out and said in the log by the caller)."""
    rows = [json.dumps(_owner_row(o), separators=(",", ":")) for o in owners]
    head = {"v": VERSION, "kind": OWNERS_KIND, "account": account, "label": label,
            "start": start.isoformat(), "end": end.isoformat()}  # fmt: skip
    room = MAX_BODY - len(json.dumps(head)) - 64  # "part", "parts", "owners" and their brackets
    chunks: list[list[str]] = [[]]
    used = 0
    for row in rows:
        if chunks[-1] and used + len(row) + 1 > room:
            if len(chunks) == MAX_OWNER_PARTS:
                break
            chunks.append([])
            used = 0
        chunks[-1].append(row)
        used += len(row) + 1
    parts = [] if not rows else chunks
    return [
        json.dumps({**head, "part": k, "parts": len(parts)}, separators=(",", ":"))[:-1]
        + ',"owners":['
        + ",".join(chunk)
        + "]}"
        for k, chunk in enumerate(parts)
    ]


def _owner_row(o: OwnerWeek) -> dict[str, Any]:
    return {
        "owner": o.owner[:256],
        "email": o.email[:256],
        "machines": o.machines,
        "gpu_hours": round(o.gpu_hours, 3),
        "avg_gpu_util": None if o.avg_gpu_util is None else round(o.avg_gpu_util, 2),
        "idle_gpu_hours": round(o.idle_gpu_hours, 3),
        "waste_usd": round(o.waste_usd, 2),
        "paid_idle_hours": round(o.paid_idle_hours, 3),
        "warned": o.warned,
        "idle": [
            [m.instance_id, m.instance_type, round(m.idle_hours, 3), round(m.usd_per_day, 2)] for m in o.idle[:SHOWN]
        ],
        "keeps": [
            [k.instance_id, k.until.isoformat(), round(k.kept_hours, 3), round(k.idle_hours, 3), round(k.waste_usd, 2)]
            for k in o.keeps[:SHOWN]
        ],
        "refused": [
            [
                r.instance_id,
                r.instance_type,
                r.due.isoformat(),
                r.why[:200],
                r.ended[:80],
                None if r.ended_at is None else r.ended_at.isoformat(),
            ]
            for r in o.refused[:SHOWN]
        ],
        "advice": [
            [
                a.instance_id,
                a.instance_type,
                a.kind,
                a.suggested[:64],
                round(a.now_usd, 4),
                round(a.then_usd, 4),
                round(a.saving_usd, 2),
                a.basis[:MAX_BASIS],
            ]
            for a in o.advice[:SHOWN]
        ],
    }


ADVICE_KINDS = frozenset({"fewer-gpus", "cheaper-gpu", "spot", "schedule"})
INSTANCE_TYPE = re.compile(r"^[a-z0-9-]+\.[a-z0-9-]+$")


def decode_owners(body: str) -> OwnersPart:
    """The owners' weeks in a hand-off, or EventValidationError naming the first field that is not as it must be."""
    if len(body) > MAX_BODY:
        raise EventValidationError(f"a hand-off of {len(body)} characters (at most {MAX_BODY})")
    try:
        raw = json.loads(body)
    except json.JSONDecodeError as exc:
        raise EventValidationError(f"a hand-off that is not JSON ({exc.msg})") from None
    except RecursionError:
        raise EventValidationError("a hand-off nested too deep to read") from None
    top = shapes.obj(raw, "hand-off")
    if top.get("v") != VERSION or top.get("kind") != OWNERS_KIND:
        raise EventValidationError(f"a hand-off of kind {str(top.get('kind'))[:40]!r} version {top.get('v')!r}")
    account = shapes.text(top, "account", "hand-off", pattern=ACCOUNT)
    label = shapes.optional_text(top, "label", "hand-off", limit=64)
    parts = int(_parts(top, "parts"))
    part = int(_number(top, "part", integer=True))
    if part >= parts:
        raise EventValidationError(f"hand-off.part is {part}, not under its {parts} parts")
    name = f"{label} ({account})" if label else account
    owners = tuple(_owner_week(o, i, account, name) for i, o in enumerate(_list(top, "owners", 10_000)))
    return OwnersPart(account, label, _time(top, "start"), _time(top, "end"), part, parts, owners)


def _owner_week(value: Any, index: int, account: str, name: str) -> OwnerWeek:
    where = f"hand-off.owners[{index}]"
    row = shapes.obj(value, where)
    return OwnerWeek(
        owner=shapes.text(row, "owner", where, limit=256),
        email=shapes.optional_text(row, "email", where, limit=256),
        account=account,
        account_name=name,
        machines=int(_checked_number(row.get("machines"), f"{where}.machines", integer=True)),
        gpu_hours=_checked_number(row.get("gpu_hours"), f"{where}.gpu_hours"),
        avg_gpu_util=_optional_number(row, "avg_gpu_util"),
        idle_gpu_hours=_checked_number(row.get("idle_gpu_hours"), f"{where}.idle_gpu_hours"),
        waste_usd=_checked_number(row.get("waste_usd"), f"{where}.waste_usd"),
        paid_idle_hours=_checked_number(row.get("paid_idle_hours"), f"{where}.paid_idle_hours"),
        warned=int(_checked_number(row.get("warned"), f"{where}.warned", integer=True)),
        idle=tuple(_idle(r, f"{where}.idle[{k}]") for k, r in enumerate(_rows(row, "idle", where))),
        keeps=tuple(_keep(r, f"{where}.keeps[{k}]") for k, r in enumerate(_rows(row, "keeps", where))),
        refused=tuple(_refused(r, f"{where}.refused[{k}]") for k, r in enumerate(_rows(row, "refused", where))),
        advice=tuple(_advice(r, f"{where}.advice[{k}]") for k, r in enumerate(_rows(row, "advice", where))),
    )


def _rows(row: Mapping[str, Any], key: str, where: str) -> list[Any]:
    values = list(shapes.items(row.get(key), f"{where}.{key}"))
    if len(values) > SHOWN:
        raise EventValidationError(f"{where}.{key} has {len(values)} entries (at most {SHOWN})")
    return values


def _fields(value: Any, where: str, count: int) -> Sequence[Any]:
    row = shapes.items(value, where)
    if len(row) != count:
        raise EventValidationError(f"{where} has {len(row)} fields, not {count}")
    return row


def _instance_type(value: Any, where: str) -> str:
    if not isinstance(value, str) or not INSTANCE_TYPE.match(value) or len(value) > 40:
        raise EventValidationError(f"{where} is {shapes.kind(value)}, not an instance type")
    return value


def _moment(value: Any, where: str) -> datetime:
    if not isinstance(value, str) or len(value) > 40:
        raise EventValidationError(f"{where} is {shapes.kind(value)}, not a time")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise EventValidationError(f"{where} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise EventValidationError(f"{where} has no time zone")
    return moment


def _idle(value: Any, where: str) -> IdleMachine:
    r = _fields(value, where, 4)
    return IdleMachine(
        shapes.instance_id(r[0], f"{where}[0]"),
        _instance_type(r[1], f"{where}[1]"),
        _checked_number(r[2], f"{where}[2]"),
        _checked_number(r[3], f"{where}[3]"),
    )


def _keep(value: Any, where: str) -> KeptIdle:
    r = _fields(value, where, 5)
    return KeptIdle(
        shapes.instance_id(r[0], f"{where}[0]"),
        _moment(r[1], f"{where}[1]"),
        _checked_number(r[2], f"{where}[2]"),
        _checked_number(r[3], f"{where}[3]"),
        _checked_number(r[4], f"{where}[4]"),
    )


def _refused(value: Any, where: str) -> RefusedStart:
    r = _fields(value, where, 6)
    return RefusedStart(
        shapes.instance_id(r[0], f"{where}[0]"),
        _instance_type(r[1], f"{where}[1]"),
        "",
        _moment(r[2], f"{where}[2]"),
        _cut_text(r[3], f"{where}[3]", 200),
        _cut_text(r[4], f"{where}[4]", 80),
        None if r[5] is None else _moment(r[5], f"{where}[5]"),
    )


def _advice(value: Any, where: str) -> Suggestion:
    r = _fields(value, where, 8)
    kind = _cut_text(r[2], f"{where}[2]", 20)
    if kind not in ADVICE_KINDS:
        raise EventValidationError(f"{where}[2] is not a kind of advice costguard gives")
    return Suggestion(
        shapes.instance_id(r[0], f"{where}[0]"),
        _instance_type(r[1], f"{where}[1]"),
        kind,
        _cut_text(r[3], f"{where}[3]", 64),
        _checked_number(r[4], f"{where}[4]"),
        _checked_number(r[5], f"{where}[5]"),
        _checked_number(r[6], f"{where}[6]"),
        _cut_text(r[7], f"{where}[7]", MAX_BASIS),
    )
