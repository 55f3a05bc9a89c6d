"""Reserved Instances against what runs: which machines they cover, counted once for a fleet and shrunk by each
stop (`RiPool`), and what they leave on demand (`ri_uncovered`). Pure: no I/O, no clock. How AWS applies them:
regional Linux RIs float across the sizes of a family in normalized units, zonal RIs stay in their zone and type.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from costguard.core.money import LINUX, NOT_SIZE_FLEXIBLE, Reserved, family, platform_of, units
from costguard.core.records import Instance


def ri_share(instance: Instance, reserved: Sequence[Reserved], running: Sequence[Instance]) -> tuple[float, str]:
    """The share of `instance`'s hour that the RIs in force leave uncovered (0 to 1), and why, with `running`
    the machines they apply to: zonal RIs first (exact type, in their zone), then regional ones (in normalized
    units across a family where size-flexible, by exact type elsewhere). The bill's uncovered usage is what
    the machines need beyond what the RIs give; without this machine it shrinks by its size, at most. (A
    caller pricing many machines of one fleet keeps a `RiPool` instead: this one counts `running` again.)"""
    if not reserved:
        return 1.0, ""
    return RiPool(running, reserved).share(instance)


@dataclass(frozen=True)
class RiSpill:
    """A regional RI pool as one machine sees it: what the running machines need of it beyond what it gives."""

    key: str  # "ri:p4d/default" (a family's size-flexible pool) or "ri:g5.48xlarge/Linux/UNIX/default"
    over: float  # units (or machines) billed on demand now
    mine: float  # the machine's own size in them
    ends: tuple[tuple[datetime, float], ...]  # each RI purchase's end and what it gives until then


# (type, zone, platform, tenancy): the machines that count alike for the RIs
_Key = tuple[str, str, str, str]


class RiPool:
    """The running machines the RIs apply to, counted by what `share` asks of them (how many of a type run in
    a zone; what a family or a type needs of the regional RIs once the zonal ones took theirs), built once
    and shrunk by each stop: pricing a fleet in turn costs one pass, not one walk of the fleet per machine."""

    def __init__(self, running: Iterable[Instance], reserved: Sequence[Reserved]) -> None:
        self.reserved = reserved
        self._count: dict[_Key, int] = defaultdict(int)
        self._keys: dict[str, set[_Key]] = defaultdict(set)  # family -> the keys counted in it
        self._types: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # family -> type -> count
        self._zonal_left: dict[tuple[str, str], int] = defaultdict(int)  # (type, zone) -> zonal RIs
        self._zonal_exact: set[_Key] = set()  # the keys a zonal RI matches exactly
        for r in reserved:
            if r.zone:
                self._zonal_left[(r.instance_type, r.zone)] += r.count
                self._zonal_exact.add((r.instance_type, r.zone, r.platform, r.tenancy))
        for instance in running:
            self.add(instance)

    def add(self, instance: Instance) -> None:
        key = _key(instance)
        self._count[key] += 1
        self._keys[family(instance.instance_type)].add(key)
        self._types[family(instance.instance_type)][instance.instance_type] += 1

    def remove(self, instance: Instance) -> None:
        key = _key(instance)
        if self._count.get(key, 0) <= 0:
            return
        self._count[key] -= 1
        self._types[family(instance.instance_type)][instance.instance_type] -= 1

    def share(self, instance: Instance) -> tuple[float, str]:
        """`ri_share` of this machine, over the machines counted now."""
        reserved = self.reserved
        if not reserved:
            return 1.0, ""
        zonal = [r for r in reserved if r.zone and _matches(r, instance, exact=True)]
        if zonal:
            same = self._count.get(_key(instance), 0)
            count = sum(r.count for r in zonal)
            if same <= count:
                return 0.0, f"covered: {same} {instance.instance_type} run in {instance.zone}, " + _ris(count, "zonal ")
        pool = _pooled(instance, reserved)
        regional = [r for r in reserved if not r.zone and _matches(r, instance, exact=not pool)]
        if not regional:
            return 1.0, ""
        mine = (units(instance.instance_type) or 1.0) if pool else 1.0
        need = self._regional_need(instance, pool=pool)
        give = sum(r.count * ((units(r.instance_type) or 0) if pool else 1) for r in regional)
        over = max(0.0, need - give)
        what = family(instance.instance_type) if pool else instance.instance_type
        counts = f"{_count(need / mine)} {what} run, " + _ris(give / mine, "")
        if pool and sum(1 for n in self._types[what].values() if n > 0) > 1:
            counts += f" (in {instance.instance_type} sizes)"
        if over <= 0:
            return 0.0, f"covered: {counts}"
        return min(mine, over) / mine, f"on demand: {counts}"

    def spill(self, instance: Instance) -> RiSpill | None:
        """The regional RIs' pool this machine draws on (a family's, or its type's), what the running machines
        need of it beyond what the RIs give (units, or machines), and its own size in them; None where no
        regional RI applies to it (zonal RIs, which stay in their zone and type, are judged now alone)."""
        reserved = self.reserved
        if not reserved:
            return None
        pool = _pooled(instance, reserved)
        regional = [r for r in reserved if not r.zone and _matches(r, instance, exact=not pool)]
        if not regional:
            return None
        zonal = sum(r.count for r in reserved if r.zone and _matches(r, instance, exact=True))
        if zonal and self._count.get(_key(instance), 0) <= zonal:
            return None  # a zonal RI covers it now
        mine = (units(instance.instance_type) or 1.0) if pool else 1.0
        ends = tuple((r.end, r.count * ((units(r.instance_type) or 0) if pool else 1)) for r in regional)
        over = max(0.0, self._regional_need(instance, pool=pool) - sum(n for _, n in ends))
        what = family(instance.instance_type) if pool else f"{instance.instance_type}/{platform_of(instance)}"
        return RiSpill(f"ri:{what}/{instance.tenancy}", over, mine, ends)

    def _regional_need(self, instance: Instance, *, pool: bool) -> float:
        """What the running machines the regional RIs could cover need of them (units, or machines), once the
        zonal RIs took the machines they cover. Within what one machine asks about, a (type, zone) has one
        platform and tenancy: the zonal RIs of that slot go to its machines up to their count."""
        platform, tenancy = platform_of(instance), instance.tenancy
        need = 0.0
        for key in self._keys.get(family(instance.instance_type), ()):
            kind, zone, its_platform, its_tenancy = key
            if pool:
                if its_platform != LINUX or its_tenancy != "default" or not units(kind):
                    continue
            elif (kind, its_platform, its_tenancy) != (instance.instance_type, platform, tenancy):
                continue
            n = self._count[key]
            if n <= 0:
                continue
            if key in self._zonal_exact:
                n -= min(n, self._zonal_left.get((kind, zone), 0))
            need += n * ((units(kind) or 0) if pool else 1)
        return need


def _key(instance: Instance) -> _Key:
    return (instance.instance_type, instance.zone, platform_of(instance), instance.tenancy)


def ri_uncovered(reserved: Sequence[Reserved], running: Sequence[Instance]) -> dict[str, float]:
    """Each running machine's share the RIs leave uncovered (0 to 1), the RIs attributed once, machine by
    machine in the order given: zonal RIs to the machines of their type and zone, then regional ones (in
    normalized units across a family where size-flexible, by exact type elsewhere). The shares add up to the
    uncovered usage `ri_share` counts; which machine of a group gets the RI is an attribution, not the bill's."""
    out = {i.instance_id: 1.0 for i in running}
    if not reserved:
        return out
    zonal: dict[tuple[str, str, str, str], int] = defaultdict(int)
    regional: dict[tuple[str, ...], float] = defaultdict(float)
    for r in reserved:
        if r.zone:
            zonal[(r.instance_type, r.zone, r.platform, r.tenancy)] += r.count
        elif r.size_flexible:
            regional[("family", family(r.instance_type))] += r.count * (units(r.instance_type) or 0)
        else:
            regional[("type", r.instance_type, r.platform, r.tenancy)] += r.count
    for i in running:
        slot = (i.instance_type, i.zone, platform_of(i), i.tenancy)
        if zonal.get(slot, 0) > 0:
            zonal[slot] -= 1
            out[i.instance_id] = 0.0
            continue
        if _pooled(i, reserved):
            key: tuple[str, ...] = ("family", family(i.instance_type))
            mine = units(i.instance_type) or 1.0
        else:
            key, mine = ("type", i.instance_type, platform_of(i), i.tenancy), 1.0
        taken = min(mine, regional.get(key, 0.0))
        if taken > 0:
            regional[key] -= taken
            out[i.instance_id] = 1.0 - taken / mine
    return out


def _pooled(instance: Instance, reserved: Sequence[Reserved]) -> bool:
    """Whether size-flexible regional RIs of its family apply to this machine."""
    return (
        units(instance.instance_type) is not None
        and family(instance.instance_type) not in NOT_SIZE_FLEXIBLE
        and platform_of(instance) == LINUX
        and instance.tenancy == "default"
        and any(r.size_flexible and family(r.instance_type) == family(instance.instance_type) for r in reserved)
    )


def _matches(ri: Reserved, instance: Instance, *, exact: bool) -> bool:
    if ri.platform != platform_of(instance) or ri.tenancy != instance.tenancy:
        return False
    if ri.zone and ri.zone != instance.zone:
        return False
    if exact:
        return ri.instance_type == instance.instance_type
    return ri.size_flexible and family(ri.instance_type) == family(instance.instance_type)


def _same_type(other: Instance, instance: Instance) -> bool:
    return (
        other.instance_type == instance.instance_type
        and platform_of(other) == platform_of(instance)
        and other.tenancy == instance.tenancy
    )


def _count(value: float) -> str:
    return f"{value:,.0f}" if abs(value - round(value)) < 0.05 else f"{value:,.1f}"


def _ris(count: float, kind: str) -> str:
    return f"{_count(count)} {kind}Reserved Instance{'' if abs(count - 1) < 0.05 else 's'}"
