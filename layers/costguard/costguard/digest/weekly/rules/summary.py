"""This account's week in the hand-off's shape: what the hub's digest and the quarterly deep dive will
show of it. Pure."""

from __future__ import annotations

from costguard.digest.handoff import MAX_GAPS, TOP_OWNERS, AccountWeek, OwnerWaste
from costguard.digest.weekly.rules.records import DigestData
from costguard.state.entries import EntryKind


def account_week(data: DigestData, *, account: str, label: str, regions: tuple[str, ...]) -> AccountWeek:
    """The week `data` describes, as the hub's digest will show it."""
    fleet = data.this_week.fleet
    owners = sorted(data.this_week.per_owner.items(), key=lambda kv: (-kv[1].waste_usd, kv[0]))
    return AccountWeek(
        account=account,
        label=label,
        start=data.start,
        end=data.end,
        regions=regions,
        machines=fleet.instances,
        gpu_hours=fleet.gpu_hours,
        idle_gpu_hours=fleet.idle_gpu_hours,
        waste_usd=fleet.waste_usd,
        avg_gpu_util=fleet.avg_gpu_util,
        warned=data.count(EntryKind.WARN),
        stopped=data.count(EntryKind.STOP, EntryKind.STOP_FROM_SLACK),
        kept=data.count(EntryKind.KEEP),
        saved_hours=data.saved_hours,
        saved_usd=data.saved_usd,
        spend_usd=data.spend_this_week,
        days=tuple((day, used, idle) for day, (used, idle) in sorted(data.this_week.per_day.items())),
        top_owners=tuple(
            OwnerWaste(owner, f.idle_gpu_hours, f.waste_usd) for owner, f in owners[:TOP_OWNERS] if f.waste_usd > 0
        ),
        gaps=tuple(data.errors[:MAX_GAPS]),
        paid_idle_hours=fleet.paid_idle_hours,
        saved_list_usd=data.saved_list_usd,
        basis=data.basis,
    )
