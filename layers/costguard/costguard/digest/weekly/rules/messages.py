"""The weekly digest in Slack. Pure.

The channel gets a post people read to the end: a headline of at most five numbers, money first and on the
bill (what the idle machines cost, against last week; who drives it; what costguard's stops saved; how much
of the commitments is used), then the chart. Everything else is in the post's thread, a reply a topic:
the idle cost by owner and team and the worst machines, the advice, other features' parts (SageMaker's),
and what costguard did, hygiene, commitments, spend and what could not be read. Each time is written for
each reader's zone (slack/blocks.py `when`); no AWS error code reaches a message (digest/gaps.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from costguard.core import tags
from costguard.core.formatting import duration, parse_time, plural, usd
from costguard.core.records import Instance
from costguard.digest.chart import Bar, day_label
from costguard.digest.gaps import not_read
from costguard.digest.owners import SPOT_WARNING, Suggestion, priced, refused_starts_text, suggestion_line
from costguard.digest.weekly.rules.advice import Advice
from costguard.digest.weekly.rules.bill import PaidIdle
from costguard.digest.weekly.rules.exempt import SHOWN, ExemptIdle
from costguard.digest.weekly.rules.figures import Figures
from costguard.digest.weekly.rules.records import DigestData
from costguard.setup.reach import reach_lines
from costguard.slack.blocks import (
    DAY,
    MAX_SECTION,
    Block,
    Message,
    Mrkdwn,
    bullet_list,
    context,
    header,
    join,
    link,
    mrkdwn,
    section,
    times_in,
    when,
)
from costguard.state.entries import EntryKind

OWNERS_SHOWN = 6  # lines of the by-owner list, its "and 7 more, $12 together" included
TEAMS_SHOWN = 3  # teams of several owners with idle cost: a team of one owner would repeat that owner's line
ADVICE_SHOWN = 2  # suggestions in the channel; each owner has theirs, with the figures they rest on, by message
DASHBOARDS_SHOWN = 3
EXEMPT_REASON = 60  # characters of an exemption's reason a line shows
NO_OWNER = "(no owner)"


class Reply(NamedTuple):
    """One reply in the digest's thread: its name (its part of the claim's key) and its message."""

    name: str
    message: Message


def _against(now: float, before: float, *, short: bool = False) -> str:
    """The change on last week; `short` where the sentence has said "the week before" already."""
    if before == 0:
        return "none last week" if now else "none last week either"
    delta = (now - before) / before * 100
    return f"{'+' if delta >= 0 else '−'}{abs(delta):.0f}%" + ("" if short else " on last week")


def _on_the_bill(data: DigestData) -> str:
    """Where the dollars come from, in three words: the bill, or the list when the bill was not read."""
    return priced(data.basis)


# ---------------------------------------------------------------------------------------------- the post
def digest_message(data: DigestData) -> Message:
    """The channel's post: the headline (at most five numbers) and where the week is; the rest in the thread."""
    week, before = data.this_week.fleet, data.last_week.fleet
    priced = _on_the_bill(data)
    if week.waste_usd > 0:
        lines = [
            f"Idle GPU machines cost *{usd(week.waste_usd)}* {priced} this week "
            f"({_against(week.waste_usd, before.waste_usd)}): what stopping them while idle would have saved."
        ]
        lines.append(_who_drives_it(data))
    elif week.idle_gpu_hours:
        lines = ["No idle GPU time cost anything this week: what sat idle ran on capacity already paid."]
    else:
        lines = ["No GPU machine sat idle this week."]
    stops = data.count(EntryKind.STOP, EntryKind.STOP_FROM_SLACK)
    # The stops were priced by the sweeps, on the bill where theirs was read, whatever this week's reads.
    where = "on the bill" if data.saved_list_usd - data.saved_usd >= 0.005 else priced
    if stops:
        lines.append(f"The stops costguard made saved *{usd(data.saved_usd)}* {where}.")
    elif data.saved_hours:  # machines stopped before the week, still off into it
        lines.append(
            f"costguard stopped no machine this week; those it stopped before stayed off into it and saved "
            f"*{usd(data.saved_usd)}* {where}."
        )
    else:
        lines.append("costguard stopped no machine this week.")
    lines.append(_commitments_headline(data))
    blocks: list[Block] = [
        header("GPU fleet this week"),
        section(join(" ", (line for line in lines if line))),
        context(
            mrkdwn(
                "{0} to {1}. More in the thread.",
                when(data.start, style=DAY),
                when(data.end),
            )
        ),
    ]
    if week.waste_usd > 0:
        text = f"GPU week: {usd(week.waste_usd)} idle {priced} ({_against(week.waste_usd, before.waste_usd)})"
    else:
        text = "GPU week: nothing idle cost anything"
    return Message(text, tuple(blocks))


def _who_drives_it(data: DigestData) -> str:
    owners = [(n, f) for n, f in data.this_week.per_owner.items() if f.waste_usd > 0]
    if not owners:
        return ""
    name, figures = max(owners, key=lambda kv: (kv[1].waste_usd, kv[0]))
    who = "machines without an owner" if name == NO_OWNER else mrkdwn("*{0}*", name)
    # A share, not their dollars: the thread's owners list says those (each number once).
    share = figures.waste_usd / data.this_week.fleet.waste_usd * 100 if data.this_week.fleet.waste_usd else 0.0
    return mrkdwn("The most: {0}, {1} of it.", who, f"{share:.0f}%")


def _least_used(data: DigestData) -> tuple[float, str] | None:
    """The least-used kind of commitment, as the post's headline says it; None when none was read."""
    c = data.commitments
    used = [(v, what) for v, what in ((c.ri_utilization, "Reserved Instances"), (c.sp_utilization, "Savings Plans"))]
    read = [(v, what) for v, what in used if v is not None]
    return min(read) if read else None


def _commitments_headline(data: DigestData) -> str:
    least = _least_used(data)
    if least is not None:
        value, what = least
        return f"Least-used commitment: {what}, *{value:.0f}%* used."
    if any(g.call in ("GetReservationUtilization", "GetSavingsPlansUtilization") for g in data.gaps):
        return "Commitments' use: not read this week."
    return ""


# -------------------------------------------------------------------------------------------- the thread
def digest_thread(data: DigestData) -> list[Reply]:
    """The post's thread, a reply a topic, in the order they are read."""
    replies = [Reply("owners", _owners(data))]
    if data.advice:
        replies.append(Reply("advice", _advice(data.advice)))
    if data.sections:
        replies.append(Reply("sections", Message("GPU week: other resources", tuple(data.sections))))
    replies.append(Reply("housekeeping", _housekeeping(data)))
    return replies


def _row(name: str, figures: Figures, warned: int = 0) -> Mrkdwn:
    """An owner's (or a team's) idle cost and hours; the warnings costguard sent them."""
    line = mrkdwn("*{0}*: *{1}* ({2} idle GPU-h", name, usd(figures.waste_usd), f"{figures.idle_gpu_hours:,.0f}")
    return line + (f", {plural(warned, 'warning')})" if warned else ")")


def _owners(data: DigestData) -> Message:
    """Who the idle cost is, at most OWNERS_SHOWN lines (the rest summed on the last); the teams where a team is
    several of them; the price basis. Owners with no idle cost, or idle only on capacity already paid, are left
    out: the commitments say those hours. The summed line promises no direct message: only owners with something
    to act on get one (digest/owners.py)."""
    week = data.this_week
    owners = sorted(week.per_owner.items(), key=lambda kv: (-kv[1].waste_usd, kv[0]))
    costly = [(n, f) for n, f in owners if round(f.waste_usd, 2) > 0]
    shown = costly if len(costly) <= OWNERS_SHOWN else costly[: OWNERS_SHOWN - 1]
    rows = [_row(n, f, data.warnings_to(n)) for n, f in shown]
    rest = costly[len(shown) :]
    if rest:
        together = usd(sum(f.waste_usd for _, f in rest))
        rows.append(Mrkdwn(f"and {len(rest)} more, {together} together"))
    title = Mrkdwn(f"*Idle cost by owner* ({_on_the_bill(data)})")
    blocks: list[Block] = [section(title + "\n" + bullet_list(rows) if rows else title)]
    teams = _teams(data, {n for n, _ in costly})
    if teams:
        blocks.append(section(Mrkdwn("*By team*\n") + bullet_list(teams)))
    if data.basis:
        blocks.append(context(data.basis))
    return Message("GPU week: idle cost by owner", tuple(blocks))


def _teams(data: DigestData, costly: set[str]) -> list[Mrkdwn]:
    """The teams whose idle cost is two owners' or more (a team of one would repeat its owner's line)."""
    members: dict[str, set[str]] = {}
    for instance in data.instances:
        owner = instance.owner or NO_OWNER
        if instance.team and owner in costly:
            members.setdefault(instance.team, set()).add(owner)
    several = [(n, f) for n, f in data.this_week.per_team.items() if len(members.get(n, ())) > 1]
    several.sort(key=lambda kv: (-kv[1].waste_usd, kv[0]))
    return [_row(n, f) + Mrkdwn(f", {plural(len(members[n]), 'owner')}") for n, f in several[:TEAMS_SHOWN]]


def suggestion(advice: Advice) -> Suggestion:
    machine = advice.instance
    return Suggestion(
        machine.instance_id,
        machine.instance_type,
        advice.kind,
        advice.suggested,
        advice.now_usd,
        advice.then_usd,
        advice.saving_usd,
        advice.basis,
    )


def advice_line(advice: Advice, now: datetime) -> Mrkdwn:
    return suggestion_line(suggestion(advice), advice.instance.owner, now=now)


def _advice(advice: Sequence[Advice], limit: int = ADVICE_SHOWN) -> Message:
    """The largest savings, a line each, in their order (their dollars say it): what to do and what it saves; the
    figures each rests on are in its owner's message (digest/owners.py), where they are acted on. The Spot
    warning comes only with a Spot line."""
    title = "*The same work for less*\n"
    lines = [short_advice_line(a) for a in advice[:limit]]
    more = len(advice) - limit
    if more > 0:
        where = "its owner's message" if more == 1 else "their owners' messages"
        lines.append(Mrkdwn(f"and {more} more in {where}"))
    blocks: list[Block] = [section(Mrkdwn(title) + bullet_list(lines))]
    if any(a.kind == "spot" for a in advice[:limit]):
        blocks.append(context(SPOT_WARNING))
    return Message("GPU week: the same work for less", tuple(blocks))


def short_advice_line(advice: Advice) -> Mrkdwn:
    machine = advice.instance
    who = machine.owner or "no owner"
    if advice.kind == "schedule":
        what = mrkdwn("tag `costguard:schedule` = `{0}`", advice.suggested)
    else:
        what = mrkdwn("*{0}* instead", "Spot" if advice.kind == "spot" else advice.suggested)
    return mrkdwn(
        "`{0}` {1} ({2}): {3}, *{4} less* this week",
        machine.instance_id,
        machine.instance_type,
        who,
        what,
        usd(advice.saving_usd),
    )


def _housekeeping(data: DigestData) -> Message:
    blocks: list[Block] = [section(_costguard_did(data))]
    if data.saved_unknown:
        blocks.append(context(stayed_off_basis(data.saved_unknown)))
    if data.failed_starts:
        blocks.append(section(refused_starts_text(data.failed_starts)))
    blocks.append(section(_hygiene(data)))
    if data.exempt_idle:
        blocks.append(section(exempt_text(data)))
    commitments = _commitments(data)
    if commitments:
        blocks.append(section(commitments))
    if data.spend_this_week is not None and data.spend_last_week is not None:
        this, before = usd(data.spend_this_week), usd(data.spend_last_week)
        against = (
            "the same as the week before"
            if this == before
            else f"{before} the week before ({_against(data.spend_this_week, data.spend_last_week, short=True)})"
        )
        blocks.append(section(f"*Spend*: {this} this week, {against}."))
    if data.dashboards:
        dashboards = sorted(data.dashboards.items())
        links = join(" · ", (link(url, team) for team, url in dashboards[:DASHBOARDS_SHOWN]))
        more = f" and {len(dashboards) - DASHBOARDS_SHOWN} more" if len(dashboards) > DASHBOARDS_SHOWN else ""
        blocks.append(context("Dashboards: " + links + more))
    gaps = not_read(data.gaps)
    if gaps:
        blocks.append(context(gaps))
    return Message("GPU week: what costguard did, hygiene, commitments and spend", tuple(blocks))


def _costguard_did(data: DigestData) -> str:
    warned = data.count(EntryKind.WARN)
    stopped = data.count(EntryKind.STOP, EntryKind.STOP_FROM_SLACK)
    kept = data.count(EntryKind.KEEP)
    done = [plural(n, what) for n, what in ((warned, "warning"), (stopped, "stop")) if n]
    line = "*What costguard did*: " + (" and ".join(done) if done else "no warning, no stop")
    if kept:
        line += f"; {plural(kept, 'machine')} kept from Slack"
    if stopped or data.saved_hours:  # what they saved on the bill is the post's: said once
        line += f". Stopped machines stayed off {hours_off(data.saved_hours)}"
        if data.saved_list_usd - data.saved_usd >= 0.005:  # on demand, those hours were worth more than on the bill
            line += f" ({usd(data.saved_list_usd)} at on-demand prices)"
    return line + "." + learned_starts_line(data)


def hours_off(hours: float) -> str:
    """How long stopped machines stayed off: minutes under an hour ("25 min", never "0 h"), else hours."""
    return duration(round(hours * 60)) if hours < 1 else f"{hours:,.0f} h"


def stayed_off_basis(unknown: int) -> str:
    """How the post's saving was reckoned, in one line: the hours each stop kept its machine off, each at what
    the bill saved that hour."""
    line = "Saved: from each stop to the next start, hour by hour on the bill"
    if unknown:
        line += f"; {plural(unknown, 'stop')} with no known restart "
        line += "is not counted" if unknown == 1 else "are not counted"
    return line + "."


def _beside(bill: float, on_demand: float) -> str:
    """The on-demand figure beside a figure on the bill, where they differ."""
    return f" on the bill ({usd(on_demand)} at on-demand prices)" if abs(on_demand - bill) >= 0.005 else ""


def learned_starts_line(data: DigestData) -> str:
    """Machines started again before the recurring work learned for them: how many, how many found no
    work, and the GPU-hours they were stopped between runs; then those started before their person's (or
    owner's) working day, which no learned run judges. Empty when there were none."""
    made, days = data.count(EntryKind.LEARNED_START), data.count(EntryKind.DAY_START)
    line = ""
    if made:
        wasted = data.count(EntryKind.LEARNED_START_WASTED)
        hours = sum(e.gpu_hours for e in data.entries if e.kind is EntryKind.LEARNED_START and e.applied)
        line += f" {plural(made, 'learned start')} before recurring work"
        line += f" ({wasted} found no work)" if wasted else ""
        line += f", after {hours:,.0f} GPU-hours stopped between runs." if round(hours) else "."
    if days:
        line += f" {plural(days, 'machine')} started before {'its' if days == 1 else 'their'} person's working day."
    return line


def _some(ids: Sequence[str], shown: int = 5) -> str:
    """A few machine ids and how many more there are: a list cut at five must not read as five."""
    named = ", ".join(f"`{i}`" for i in ids[:shown])
    return named + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _hygiene(data: DigestData) -> Mrkdwn:
    no_owner = [i.instance_id for i in data.no_owner]
    silent = [i.instance_id for i in data.instances if not i.telemetry]
    told = {e.instance_id for e in data.exempt_idle[:SHOWN]}  # the exempt section says these: once
    exempt = [i for i in data.raw.values() if _kept(i) and i.instance_id not in told]
    lines: list[str] = []
    if no_owner:
        lines.append(f"{len(no_owner)} without an owner: {_some(no_owner)}")
    if silent:
        lines.append(f"{len(silent)} without GPU telemetry: {_some(silent)}")
    if data.unanswered:  # why the check cannot reach them, and the fix: a line a reason
        lines += reach_lines(data.unanswered)
        if (idled := _unanswered_idle(data)) is not None:
            lines.append(idled)
    elif data.no_activity_check:
        lines.append(
            f"{len(data.no_activity_check)} judged on metrics alone (no SSM agent for the activity check): "
            f"{_some(data.no_activity_check)}"
        )
    for instance in exempt[:5]:
        reason = instance.tags.get(tags.EXEMPT)
        who = instance.tags.get(tags.KEPT_BY, "")
        if reason is not None:
            what = mrkdwn("exempt ({0})", reason)
        else:
            until = parse_time(instance.tags[tags.KEEP_UNTIL])
            what = mrkdwn("kept until {0}", when(until) if until else instance.tags[tags.KEEP_UNTIL])
        lines.append(mrkdwn("`{0}` {1}", instance.instance_id, what) + (mrkdwn(" by {0}", who) if who else ""))
    if len(exempt) > 5:
        lines.append(f"and {len(exempt) - 5} more exempt or kept")
    for keep in data.outlived_keeps[:5]:
        lines.append(
            mrkdwn(
                "`{0}` kept by {1} until {2} sat idle {3} of its {4} kept hours ({5}): *Keep while it works* ends "
                "a keep with the work",
                keep.instance_id,
                keep.kept_by,
                when(keep.until),
                f"{keep.idle_hours:.0f}",
                f"{keep.kept_hours:.0f}",
                usd(keep.waste_usd),
            )
        )
    return Mrkdwn("*Hygiene*\n") + bullet_list(lines) if lines else Mrkdwn("*Hygiene*: nothing to fix.")


def _kept(instance: Instance) -> bool:
    """Exempt, or kept until a time: held by its owner's word, whatever it did."""
    return tags.EXEMPT in instance.tags or tags.KEEP_UNTIL in instance.tags


def _unanswered_idle(data: DigestData) -> Mrkdwn | None:
    """What the machines the check cannot reach idled this week, by the digest's own hours and prices; part of it
    costguard holds them through for work it cannot see, which their fix lets it look at instead. Not counted:
    a machine exempt or kept (its keep holds it, and the exempt list says it), or on capacity already paid (its
    idle hours cost nothing more). None where the rest did not idle."""
    by_id = {i.instance_id: i for i in data.instances}
    gpu_hours = cost = 0.0
    for iid in {u.instance_id for u in data.unanswered}:
        instance, idle = by_id.get(iid), data.this_week.idle_hours_by_instance.get(iid, 0.0)
        raw = data.raw.get(iid)
        if instance is None or not idle or (raw is not None and _kept(raw)) or instance.paid_by:
            continue
        gpu_hours += idle * instance.gpus
        cost += idle * instance.idle_usd_per_hour
    if gpu_hours < 0.5:
        return None
    dollars = f" ({usd(cost)} {_on_the_bill(data)})" if cost >= 0.005 else ""  # no price read: no dollars said
    # a few words: the team's whole digest is read to the end (at most 400 words, tests/demo)
    return Mrkdwn(
        f"Together they idled {gpu_hours:,.0f} GPU-hours{dollars}, part of it held for work costguard cannot see; "
        "the fix lets it look"
    )


def exempt_text(data: DigestData) -> Mrkdwn:
    """The exempt machines that sat idle this week (at most SHOWN lines, the costliest first), and where their week
    shows runs, that keeping them for their runs would stop them between those instead."""
    found = data.exempt_idle
    which = f"the {SHOWN} costliest of {len(found)}" if len(found) > SHOWN else "the costliest first"
    title = Mrkdwn(f"*Exempt machines that sat idle* (never stopped), {which}, {_on_the_bill(data)}")
    if any(e.runs for e in found[:SHOWN]):
        title += Mrkdwn(f". Where work recurs, `{tags.KEEP_FOR_RUNS}=on` stops it between runs instead")
    title += Mrkdwn("\n")
    return title + bullet_list([_exempt_line(e, data.end) for e in found[:SHOWN]], limit=MAX_SECTION - len(title))


def _exempt_line(exempt: ExemptIdle, now: datetime) -> Mrkdwn:
    line = mrkdwn(
        "`{0}` {1} ({2}, exempt: {3}): idle {4} GPU-h{5}",
        exempt.instance_id,
        exempt.instance_type,
        exempt.owner or "no owner",
        exempt.reason[:EXEMPT_REASON] or "no reason given",
        f"{exempt.idle_gpu_hours:,.0f}",
        f", *{usd(exempt.idle_usd)}*" if round(exempt.idle_usd, 2) else " on capacity already paid",
    )
    return line + Mrkdwn(" · ") + times_in(exempt.runs, now) + Mrkdwn(": keep it for its runs") if exempt.runs else line


def _commitments(data: DigestData) -> Mrkdwn:
    c = data.commitments
    gaps = {g.call for g in data.gaps}

    headline = _least_used(data)

    def kind(what: str, used: float | None, covered: float | None, of: str, calls: tuple[str, str]) -> str:
        """What was read of one kind of commitment; a figure not read is left out (the thread's last line says
        which and why), and a kind with none read and none refused has none in force. The use the post's
        headline gives is not said again."""
        said = [f"{used:.0f}% used"] if used is not None and headline != (used, what) else []
        said += [f"{covered:.0f}% of eligible {of} covered"] if covered is not None else []
        if said:
            return f"{what}: {', '.join(said)}"
        in_headline = headline is not None and headline[1] == what
        return "" if in_headline or gaps & set(calls) else f"{what}: none in force"

    lines: list[str] = [
        line
        for line in (
            kind(
                "Reserved Instances",
                c.ri_utilization,
                c.ri_coverage,
                "hours",
                ("GetReservationUtilization", "GetReservationCoverage"),
            ),
            kind(
                "Savings Plans",
                c.sp_utilization,
                c.sp_coverage,
                "spend",
                ("GetSavingsPlansUtilization", "GetSavingsPlansCoverage"),
            ),
        )
        if line
    ]
    lines += [mrkdwn("{0} ends {1}", x.label, when(x.end, style=DAY)) for x in c.expiring]
    week = data.this_week.fleet
    if week.paid_idle_hours and not data.paid_idle:
        lines.append(f"{week.paid_idle_hours:,.0f} idle machine-hours were on capacity already paid")
    lines += [paid_idle_line(p) for p in data.paid_idle[:5]]
    return Mrkdwn("*Commitments*\n") + bullet_list(lines) if lines else Mrkdwn("")


def paid_idle_line(paid: PaidIdle) -> Mrkdwn:
    """Idle hours a commitment paid for: what they would have cost on demand, and what to do next time."""
    return mrkdwn(
        "{0} idle machine-hours on {1}, already paid ({2} on demand): {3}.",
        f"{paid.idle_hours:,.0f}",
        paid.paid_by,
        usd(paid.on_demand_usd),
        paid.advice[:1].upper() + paid.advice[1:],
    )


# --------------------------------------------------------------------------------------------- the chart
def chart_days(data: DigestData) -> list[Bar]:
    """A bar a day: GPU-hours used and idle, the idle hours' cost over it; a day the week covers only part
    of, marked (today so far, a first day the week began inside)."""
    today = data.end.date()
    bars = []
    for date, (used, idle) in sorted(data.this_week.per_day.items()):
        midnight = datetime.combine(date, datetime.min.time(), data.start.tzinfo)
        began, ended = max(midnight, data.start), min(midnight + timedelta(days=1), data.end)
        part = ""
        if began > midnight:
            part = f"from {began:%H:%M}"
        elif ended < midnight + timedelta(days=1):
            part = f"to {ended:%H:%M}"
        bars.append(Bar(day_label(date, today), used, idle, data.this_week.per_day_usd.get(date, 0.0), part))
    return bars


def chart_source(data: DigestData) -> str:
    """The chart's foot: where its figures come from and what its dollars are."""
    priced = (
        "idle hours at on-demand list prices"
        if _on_the_bill(data) != "on the bill"
        else f"idle hours priced on the bill as it stood {data.end:%a %d %b %H:%M} UTC"
    )
    return (
        f"Source: CloudWatch, each machine's GPU and CPU use hour by hour; {priced}. "
        "Days in UTC; lighter: part of a day."
    )
