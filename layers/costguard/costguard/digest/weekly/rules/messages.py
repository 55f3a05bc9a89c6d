"""The weekly digest in Slack: the fleet's week for the channel, each owner's week for them. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from costguard.core import tags
from costguard.core.formatting import usd
from costguard.digest.chart import day_label
from costguard.digest.weekly.rules.advice import Advice
from costguard.digest.weekly.rules.bill import PaidIdle
from costguard.digest.weekly.rules.figures import Figures, InstanceWeek, worst_idle
from costguard.digest.weekly.rules.records import DigestData
from costguard.digest.weekly.rules.starts import FailedStart
from costguard.slack.blocks import (
    Block,
    Message,
    Mrkdwn,
    bullet_list,
    context,
    divider,
    fields_section,
    header,
    join,
    link,
    mrkdwn,
    section,
)
from costguard.state.entries import EntryKind


def _pct(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else "n/a"


def _change(now: float, before: float) -> str:
    if before == 0:
        return "new" if now else "same"
    delta = (now - before) / before * 100
    return f"{'+' if delta >= 0 else '−'}{abs(delta):.0f}% vs last week"


def _row(name: str, figures: Figures) -> str:
    return (
        f"*{name}*: {figures.instances} machine{'s' if figures.instances != 1 else ''}, "
        f"{figures.gpu_hours:,.0f} GPU-h at {_pct(figures.avg_gpu_util)}, idle {figures.idle_gpu_hours:,.0f} GPU-h, "
        f"waste {usd(figures.waste_usd)}" + _paid_hours(figures)
    )


def _paid_hours(figures: Figures) -> str:
    """Idle hours on capacity already paid: not waste a stop avoids, said apart."""
    paid = figures.paid_idle_hours
    return f" ({paid:,.0f} idle machine-hours on paid capacity)" if paid else ""


def _warned(count: int) -> str:
    return f", {count} idle warning{'s' if count != 1 else ''}" if count else ""


def chart_days(data: DigestData) -> list[tuple[str, float, float]]:
    today = data.end.date()
    return [(day_label(day, today), used, idle) for day, (used, idle) in sorted(data.this_week.per_day.items())]


def digest_message(data: DigestData) -> Message:
    week, before = data.this_week.fleet, data.last_week.fleet
    title = f"GPU fleet, {data.start:%a %d %b} to today"
    summary = (
        f"*{week.instances}* GPU machines ran *{week.gpu_hours:,.0f} GPU-hours* "
        f"at {_pct(week.avg_gpu_util)} average GPU use. "
        f"*{week.idle_gpu_hours:,.0f} GPU-hours were idle*: *{usd(week.waste_usd)}* on the bill that stops "
        f"would have saved ({_change(week.waste_usd, before.waste_usd)})."
    )
    if week.paid_idle_hours:
        summary += f" {week.paid_idle_hours:,.0f} idle machine-hours were on capacity already paid: see *Commitments*."
    blocks = [
        header(title),
        *([context(data.basis)] if data.basis else []),
        section(summary),
        fields_section(
            [
                f"*GPU-hours*\n{week.gpu_hours:,.0f} ({_change(week.gpu_hours, before.gpu_hours)})",
                f"*Idle GPU-hours*\n{week.idle_gpu_hours:,.0f} ({_change(week.idle_gpu_hours, before.idle_gpu_hours)})",
                f"*Waste*\n{usd(week.waste_usd)} (last week {usd(before.waste_usd)})",
                f"*Average GPU use*\n{_pct(week.avg_gpu_util)} (last week {_pct(before.avg_gpu_util)})",
            ]
        ),
    ]
    owners = sorted(data.this_week.per_owner.items(), key=lambda kv: kv[1].waste_usd, reverse=True)
    if owners:
        rows = [_row(n, f) + _warned(data.warnings_to(n)) for n, f in owners]
        blocks += [divider(), section("*By owner, most waste first*\n" + bullet_list(rows))]
    teams = sorted(data.this_week.per_team.items(), key=lambda kv: kv[1].waste_usd, reverse=True)
    if teams:
        blocks.append(section("*By team*\n" + bullet_list([_row(n, f) for n, f in teams])))
    worst = worst_idle(data.instances, data.this_week)
    if worst:
        lines = [
            f"`{i.instance_id}` {i.instance_type} ({i.owner or 'no owner'}): "
            f"idle {hours:.0f} h this week, {usd(per_day)}/day"
            for i, hours, per_day in worst
        ]
        blocks.append(section("*Worst idle machines still running*\n" + bullet_list(lines)))
    if data.advice:
        blocks += _advice_blocks(
            data.advice, "*Right-sizing, Spot and working hours* (each from a week of this machine's data)"
        )
    if data.sections:
        blocks += [divider(), *data.sections]
    blocks += [divider(), section(_costguard_did(data))]
    if data.failed_starts:
        blocks.append(section(failed_starts_text(data.failed_starts)))
    blocks += [section(_hygiene(data)), section(_commitments(data))]
    if data.spend_this_week is not None and data.spend_last_week is not None:
        blocks.append(
            section(
                f"*Spend*: {usd(data.spend_this_week)} this week, {usd(data.spend_last_week)} the week before "
                f"({_change(data.spend_this_week, data.spend_last_week)})."
            )
        )
    if data.dashboards:
        links = join(" · ", (link(url, team) for team, url in sorted(data.dashboards.items())))
        blocks.append(context("Dashboards: " + links))
    if data.errors:
        blocks.append(context("Not available this week: " + "; ".join(e for e in data.errors)))
    text = f"GPU week: {week.idle_gpu_hours:,.0f} idle GPU-hours, {usd(week.waste_usd)} wasted"
    return Message(text, tuple(blocks))


SPOT_WARNING = (
    ":warning: Spot capacity can be taken back with two minutes' notice: move only jobs that save checkpoints "
    "and resume from them."
)


def advice_line(advice: Advice) -> Mrkdwn:
    machine = advice.instance
    if advice.kind == "schedule":
        return mrkdwn(
            "`{0}` {1} ({2}): tag it `costguard:schedule` = `{3}`: costguard starts it before those hours and "
            "never warns about it in them; outside them a stop saves {4}/h, *{5}* this week. {6}",
            machine.instance_id,
            machine.instance_type,
            machine.owner or "no owner",
            advice.suggested,
            usd(advice.now_usd),
            usd(advice.saving_usd),
            advice.basis[:1].upper() + advice.basis[1:],
        )
    what = "Spot" if advice.kind == "spot" else advice.suggested
    return mrkdwn(
        "`{0}` {1} ({2}): *{3}* instead, {4}/h rather than {5}/h, *{6} less* this week. {7}",
        machine.instance_id,
        machine.instance_type,
        machine.owner or "no owner",
        what,
        usd(advice.then_usd),
        usd(advice.now_usd),
        usd(advice.saving_usd),
        advice.basis[:1].upper() + advice.basis[1:],
    )


def _advice_blocks(advice: Sequence[Advice], title: str, limit: int = 5) -> list[Block]:
    blocks: list[Block] = [section(Mrkdwn(title + "\n") + bullet_list([advice_line(a) for a in advice[:limit]]))]
    if any(a.kind == "spot" for a in advice[:limit]):
        blocks.append(context(SPOT_WARNING))
    return blocks


def _costguard_did(data: DigestData) -> str:
    warned = data.count(EntryKind.WARN)
    stopped = data.count(EntryKind.STOP, EntryKind.STOP_FROM_SLACK)
    kept = data.count(EntryKind.KEEP)
    return (
        f"*What costguard did*: {warned} warning{'s' if warned != 1 else ''}, "
        f"{stopped} stop{'s' if stopped != 1 else ''}, {kept} machine{'s' if kept != 1 else ''} kept from Slack. "
        "Stopped machines stayed off "
        f"{data.saved_hours:,.0f} h: *{usd(data.saved_usd)} saved*{_beside(data.saved_usd, data.saved_list_usd)}."
        + learned_starts_line(data)
    )


def _beside(bill: float, on_demand: float) -> str:
    """The on-demand figure beside a figure on the bill, where they differ."""
    return f" on the bill ({usd(on_demand)} at on-demand prices)" if abs(on_demand - bill) >= 0.005 else ""


def failed_starts_text(starts: Sequence[FailedStart], shown: int = 10) -> Mrkdwn:
    """Every start EC2 refused this week: machine, owner, when, why, how it ended."""
    lines = [
        mrkdwn(
            "`{0}` {1} ({2}), due {3}: {4}; {5}",
            f.instance_id,
            f.instance_type,
            f.owner or "no owner",
            f"{f.due:%a %d %b %H:%M} UTC",
            f.why,
            f.ended,
        )
        for f in starts[:shown]
    ]
    if len(starts) > shown:
        lines.append(Mrkdwn(f"and {len(starts) - shown} more"))
    count = len(starts)
    return Mrkdwn(f"*Failed starts* ({count} start{'s' if count != 1 else ''} EC2 refused)\n") + bullet_list(lines)


def learned_starts_line(data: DigestData) -> str:
    """Machines started again before the recurring work learned for them: how many, how many found no
    work, and the GPU-hours they were stopped between runs. Empty when there were none."""
    made = data.count(EntryKind.LEARNED_START)
    if not made:
        return ""
    wasted = data.count(EntryKind.LEARNED_START_WASTED)
    hours = sum(e.gpu_hours for e in data.entries if e.kind is EntryKind.LEARNED_START and e.applied)
    return (
        f" {made} learned start{'s' if made != 1 else ''} before recurring work ({wasted} found no work), "
        f"after {hours:,.0f} GPU-hours stopped between runs."
    )


def _some(ids: Sequence[str], shown: int = 5) -> str:
    """A few machine ids and how many more there are: a list cut at five must not read as five."""
    named = ", ".join(f"`{i}`" for i in ids[:shown])
    return named + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _hygiene(data: DigestData) -> str:
    no_owner = [i.instance_id for i in data.no_owner]
    silent = [i.instance_id for i in data.instances if not i.telemetry]
    exempt = [i for i in data.raw.values() if tags.EXEMPT in i.tags or tags.KEEP_UNTIL in i.tags]
    lines = [
        f"{len(no_owner)} without an owner" + (": " + _some(no_owner) if no_owner else ""),
        f"{len(silent)} without GPU telemetry" + (": " + _some(silent) if silent else ""),
    ]
    if data.no_activity_check:
        lines.append(
            f"{len(data.no_activity_check)} without the activity check (no SSM agent: judged on metrics alone): "
            f"{_some(data.no_activity_check)}. Install the SSM agent and an instance profile with "
            "AmazonSSMManagedInstanceCore."
        )
    for instance in exempt[:5]:
        reason = instance.tags.get(tags.EXEMPT)
        who = instance.tags.get(tags.KEPT_BY, "")
        what = f"exempt ({reason})" if reason is not None else f"kept until {instance.tags[tags.KEEP_UNTIL]}"
        lines.append(f"`{instance.instance_id}` {what}" + (f" by {who}" if who else ""))
    if len(exempt) > 5:
        lines.append(f"and {len(exempt) - 5} more exempt or kept")
    for keep in data.outlived_keeps[:5]:
        lines.append(
            f"`{keep.instance_id}` kept by {keep.kept_by} until {keep.until:%a %H:%M} UTC sat idle "
            f"{keep.idle_hours:.0f} of its {keep.kept_hours:.0f} kept hours ({usd(keep.waste_usd)}): "
            "*Keep while it works* ends a keep with the work"
        )
    return "*Hygiene*\n" + bullet_list(lines)


def _commitments(data: DigestData) -> str:
    c = data.commitments
    lines = [
        f"Reserved Instances: {_pct(c.ri_utilization)} used, {_pct(c.ri_coverage)} of eligible hours covered",
        f"Savings Plans: {_pct(c.sp_utilization)} used, {_pct(c.sp_coverage)} of eligible spend covered",
    ]
    lines += [f"{x.label} ends {x.end:%a %d %b}" for x in c.expiring]
    lines += [paid_idle_line(p) for p in data.paid_idle[:5]]
    return "*Commitments*\n" + bullet_list(lines)


def paid_idle_line(paid: PaidIdle) -> Mrkdwn:
    """Idle hours a commitment paid for: what they would have cost on demand, and what to do next time."""
    return mrkdwn(
        "{0} idle machine-hours on {1} ({2} on demand, already paid: not stopped for money): {3}. {4}",
        f"{paid.idle_hours:,.0f}",
        paid.paid_by,
        usd(paid.on_demand_usd),
        paid.advice[:1].upper() + paid.advice[1:],
        _some(paid.machines, 3),
    )


def owner_message(data: DigestData, owner: str, machines: Sequence[InstanceWeek]) -> Message:
    figures = data.this_week.per_owner.get(owner, Figures())
    worst = worst_idle(machines, data.this_week, limit=3)
    lines = [
        f"`{i.instance_id}` {i.instance_type}: idle {hours:.0f} h this week, {usd(per_day)}/day while it runs"
        for i, hours, per_day in worst
    ]
    body = (
        f"Your GPU week: {figures.instances} machine{'s' if figures.instances != 1 else ''}, "
        f"{figures.gpu_hours:,.0f} GPU-hours at {_pct(figures.avg_gpu_util)} average use; "
        f"{figures.idle_gpu_hours:,.0f} GPU-hours idle ({usd(figures.waste_usd)} on the bill)."
    )
    if figures.paid_idle_hours:
        body += (
            f" {figures.paid_idle_hours:,.0f} idle machine-hours were on capacity already paid: not stopped for money."
        )
    warned = data.warnings_to(owner)
    if warned:
        body += f" costguard warned you about {warned} idle machine{'s' if warned != 1 else ''} this week."
    blocks = [section(body)]
    if lines:
        blocks.append(section("*Idle the longest, still running*\n" + bullet_list(lines)))
    mine = {i.instance_id for i in machines}
    keeps = [
        f"`{k.instance_id}` kept until {k.until:%a %H:%M} UTC sat idle {k.idle_hours:.0f} h of its {k.kept_hours:.0f} "
        f"({usd(k.waste_usd)})"
        for k in data.outlived_keeps
        if k.instance_id in mine
    ]
    if keeps:
        blocks.append(
            section("*Kept, then idle*: a shorter keep, or *Keep while it works*, next time\n" + bullet_list(keeps))
        )
    refused = [f for f in data.failed_starts if f.instance_id in mine or (f.owner and f.owner == owner)]
    if refused:
        blocks.append(section(failed_starts_text(refused)))
    theirs = [a for a in data.advice if a.instance.instance_id in mine]
    if theirs:
        blocks += _advice_blocks(theirs, "*Worth a look*: the same work for less")
    blocks.append(context("Stop what you are not using; tag `costguard:keep-until` what you are. — costguard"))
    if data.basis:
        blocks.append(context(data.basis))
    return Message(f"Your GPU week: {usd(figures.waste_usd)} idle", tuple(blocks))
