"""This account's week in the hand-off's shape (what the hub's digest and the quarterly deep dive will show
of it), and each owner's week (what they are told, by this account or by the hub). Pure."""

from __future__ import annotations

from collections import defaultdict

from costguard.core.people import owner_email
from costguard.digest.handoff import MAX_GAPS, TOP_OWNERS, AccountWeek, OwnerWaste
from costguard.digest.owners import SHOWN, IdleMachine, KeptIdle, OwnerWeek
from costguard.digest.weekly.rules.figures import InstanceWeek, worst_idle
from costguard.digest.weekly.rules.messages import suggestion
from costguard.digest.weekly.rules.records import DigestData
from costguard.state.entries import EntryKind


def account_week(
    data: DigestData, *, account: str, label: str, regions: tuple[str, ...], owner_parts: int | None = None
) -> AccountWeek:
    """The week `data` describes, as the hub's digest will show it; `owner_parts`, the owners' weeks that
    follow it to the hub (None: this account messages its owners itself)."""
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
        # What was not read, as the channel may read it: never an AWS error code (digest/gaps.py).
        gaps=tuple(dict.fromkeys(f"{g.what}: not read" for g in data.gaps))[:MAX_GAPS],
        paid_idle_hours=fleet.paid_idle_hours,
        saved_list_usd=data.saved_list_usd,
        basis=data.basis,
        days_usd=tuple(sorted(data.this_week.per_day_usd.items())),
        owner_parts=owner_parts,
    )


def owner_weeks(data: DigestData, *, email_domain: str, account: str = "", name: str = "") -> list[OwnerWeek]:
    """Each owner whose machines ran this week, with what concerns them (`account` and `name` where the
    hub is to tell them); the most idle cost first."""
    machines: dict[str, list[InstanceWeek]] = defaultdict(list)
    for instance in data.instances:
        if instance.owner:
            machines[instance.owner].append(instance)
    out = []
    for owner, theirs in machines.items():
        figures = data.this_week.per_owner.get(owner)
        if figures is None:
            continue  # nothing of theirs ran this week: nothing to tell them
        mine = {i.instance_id for i in theirs}
        out.append(
            OwnerWeek(
                owner=owner,
                email=owner_email(owner, email_domain) or "",
                account=account,
                account_name=name,
                machines=figures.instances,
                gpu_hours=figures.gpu_hours,
                avg_gpu_util=figures.avg_gpu_util,
                idle_gpu_hours=figures.idle_gpu_hours,
                waste_usd=figures.waste_usd,
                paid_idle_hours=figures.paid_idle_hours,
                warned=data.warnings_to(owner),
                idle=tuple(
                    IdleMachine(i.instance_id, i.instance_type, hours, per_day)
                    for i, hours, per_day in worst_idle(theirs, data.this_week, limit=SHOWN)
                ),
                keeps=tuple(
                    KeptIdle(k.instance_id, k.until, k.kept_hours, k.idle_hours, k.waste_usd)
                    for k in data.outlived_keeps
                    if k.instance_id in mine
                )[:SHOWN],
                refused=tuple(f for f in data.failed_starts if f.instance_id in mine or (f.owner and f.owner == owner))[
                    :SHOWN
                ],
                advice=tuple(suggestion(a) for a in data.advice if a.instance.instance_id in mine)[:SHOWN],
            )
        )
    return sorted(out, key=lambda w: (-w.waste_usd, w.owner))
