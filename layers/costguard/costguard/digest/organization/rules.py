"""The organization's weekly digest at the hub: a section per account, the totals, and the accounts
that did not report named. Pure: figures in, a message and the chart's days out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cached_property

from costguard.core.formatting import duration, plural, usd
from costguard.digest.chart import Bar, day_label
from costguard.digest.gaps import gaps_of
from costguard.digest.handoff import AccountWeek
from costguard.slack.blocks import (
    DAY,
    Message,
    Mrkdwn,
    bullet_list,
    context,
    divider,
    fields_section,
    header,
    join,
    mrkdwn,
    section,
    when,
)

# A hand-off older than this is last week's: its account has not reported this week.
FRESH = timedelta(days=6)


@dataclass
class OrganizationWeek:
    """What the hub knows when its digest runs."""

    now: datetime
    expected: Sequence[str]  # the accounts that should report, in the order the operator gave them
    reported: Mapping[str, AccountWeek]  # the latest hand-off of each account
    refused: int = 0  # hand-offs that could not be read or came from an account not expected
    why: Mapping[str, str] = field(default_factory=dict)  # why an account may have no figures (its stack instances)
    left: Sequence[str] = ()  # covered by the last digest, since gone from the organization: removed
    moved: Sequence[str] = ()  # covered by the last digest, still in the organization but out of the chosen units

    @cached_property
    def fresh(self) -> list[AccountWeek]:
        """This week's hand-offs of the expected accounts, in their order."""
        return [w for a in self.expected if (w := self.reported.get(a)) is not None and w.end >= self.now - FRESH]

    @property
    def missing(self) -> list[tuple[str, AccountWeek | None]]:
        """Each account without this week's figures, with what it last sent (or None: never)."""
        have = {w.account for w in self.fresh}
        return [(a, self.reported.get(a)) for a in self.expected if a not in have]


def _pct(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else "n/a"


def _average_util(weeks: Sequence[AccountWeek]) -> float | None:
    weighted = [(w.avg_gpu_util, w.gpu_hours) for w in weeks if w.avg_gpu_util is not None and w.gpu_hours]
    hours = sum(h for _, h in weighted)
    return sum(u * h for u, h in weighted) / hours if hours else None


def chart_days(org: OrganizationWeek) -> list[Bar]:
    """Used and idle GPU-hours day by day, summed over the accounts that reported, with what the idle hours
    cost (where every account said it); a day some account's week covers only part of, or not at all, is
    marked as part of a day."""
    days: dict[date, list[float]] = defaultdict(lambda: [0.0, 0.0])
    usd: dict[date, float] = defaultdict(float)
    priced = bool(org.fresh) and all(w.days_usd or not w.idle_gpu_hours for w in org.fresh)
    for week in org.fresh:
        for d, used, idle in week.days:
            days[d][0] += used
            days[d][1] += idle
        for d, cost in week.days_usd:
            usd[d] += cost
    today = org.now.date()
    return [
        Bar(day_label(d, today), used, idle, usd.get(d, 0.0) if priced else None, _part(org.fresh, d))
        for d, (used, idle) in sorted(days.items())
    ][-8:]


def _part(weeks: Sequence[AccountWeek], d: date) -> str:
    """What part of day `d` every account's week covers: "" for all of it."""
    midnight = datetime.combine(d, datetime.min.time(), UTC)
    began = max(*(w.start for w in weeks), midnight)
    ended = min(*(w.end for w in weeks), midnight + timedelta(days=1))
    if began >= ended:
        return "part"  # some account's week does not reach this day at all
    if began > midnight:
        return f"from {began.astimezone(UTC):%H:%M}"
    return f"to {ended.astimezone(UTC):%H:%M}" if ended < midnight + timedelta(days=1) else ""


def chart_source(org: OrganizationWeek) -> str:
    return (
        f"Source: the weekly digest of each of {len(org.fresh)} accounts (CloudWatch, hour by hour), idle hours "
        "priced on each account's bill. Days in UTC; lighter: part of a day."
    )


def organization_message(org: OrganizationWeek) -> Message:
    weeks = sorted(org.fresh, key=lambda w: (-w.waste_usd, w.account))
    machines = sum(w.machines for w in weeks)
    gpu_hours = sum(w.gpu_hours for w in weeks)
    idle = sum(w.idle_gpu_hours for w in weeks)
    waste = sum(w.waste_usd for w in weeks)
    stopped = sum(w.stopped for w in weeks)
    saved_usd = sum(w.saved_usd for w in weeks)
    saved_hours = sum(w.saved_hours for w in weeks)
    expected = len(org.expected)
    off = duration(round(saved_hours * 60)) if saved_hours < 1 else f"{saved_hours:,.0f} h"  # never "0 h"
    blocks = [
        header("GPU fleet across the organization, this week"),
        context(mrkdwn("The week to {0}.", when(org.now))),
        section(
            f"*{len(weeks)} of {expected} accounts* reported: *{machines}* GPU machines ran *{gpu_hours:,.0f} "
            f"GPU-hours* at {_pct(_average_util(weeks))} average GPU use. *{idle:,.0f} GPU-hours were idle*: "
            f"*{usd(waste)}* on the bill that stops would have saved{_paid(weeks)}. costguard stopped {stopped} "
            f"machine{'' if stopped == 1 else 's'}; stopped machines stayed off {off}: "
            f"*{usd(saved_usd)} saved*{_beside(weeks)}."
        ),
    ]
    listed = [w for w in weeks if not w.basis.startswith("Prices as")]
    if weeks:
        basis = "Prices as each account's bill shows them"
        if listed:
            basis = f"{basis}, but {', '.join(w.name for w in listed)}: the on-demand list"
        blocks.append(context(mrkdwn("{0} (each account's digest says why).", basis)))
    if weeks:
        blocks.append(
            fields_section(
                [
                    f"*GPU-hours*\n{gpu_hours:,.0f}",
                    f"*Idle GPU-hours*\n{idle:,.0f}",
                    f"*Waste*\n{usd(waste)}",
                    f"*Saved by stops*\n{usd(saved_usd)}",
                ]
            )
        )
        # An account whose machines were all stopped all week still has its saving to show: it keeps its row.
        running = [w for w in weeks if w.machines or w.gpu_hours or w.stopped or w.saved_usd]
        if running:
            blocks += [divider(), section(mrkdwn("*By account, most waste first*\n") + bullet_list(_rows(running)))]
        if len(running) < len(weeks):
            idle_accounts = join(", ", [w.name for w in weeks if w not in running])
            blocks.append(context(mrkdwn("Reporting, no GPU machines this week: ") + idle_accounts + Mrkdwn(".")))
        owners = _top_owners(weeks)
        if owners:
            blocks.append(section(mrkdwn("*Most idle, across accounts*\n") + bullet_list(owners)))
    if org.missing:
        blocks += [divider(), section(_missing(org))]
    gone = [mrkdwn("`{0}` left the organization", a) for a in org.left]
    gone += [mrkdwn("`{0}` is no longer in the chosen units", a) for a in org.moved]
    if gone:
        blocks.append(context(join("; ", gone) + Mrkdwn(": removed from this digest.")))
    notes: list[Mrkdwn] = []
    unread = [mrkdwn("{0}: {1}", w.name, ", ".join(_said(w.gaps))) for w in weeks if w.gaps]
    if unread:
        notes.append(mrkdwn("Not read this week: ") + join("; ", unread) + Mrkdwn(". The figures leave them out."))
    if org.refused:
        notes.append(
            Mrkdwn(
                f"{plural(org.refused, 'hand-off')} could not be read or came from an account this hub does not "
                "expect: they stay on the figures queue and go to the dead-letter queue after three tries."
            )
        )
    if notes:
        blocks.append(context(join(" ", notes)))
    missing = f", {plural(len(org.missing), 'account')} without figures" if org.missing else ""
    text = f"GPU week, {len(weeks)} accounts: {idle:,.0f} idle GPU-hours, {usd(waste)} wasted{missing}"
    return Message(text, tuple(blocks))


def _said(gaps: Sequence[str]) -> list[str]:
    """What an account could not read, as the channel may read it: a member from before issue 34 handed
    over "Call: Code", which is said as what the call reads, never with its code; one since, "What: not read"."""
    return list(
        dict.fromkeys(g.removesuffix(": not read") if g.endswith(": not read") else gaps_of([g])[0].what for g in gaps)
    )


def _paid(weeks: Sequence[AccountWeek]) -> str:
    paid = sum(w.paid_idle_hours for w in weeks)
    return f", and {paid:,.0f} idle machine-hours were on capacity already paid (buy less at renewal)" if paid else ""


def _beside(weeks: Sequence[AccountWeek]) -> str:
    """The stops' saving at the on-demand price, beside the bill's, where every account said it and it differs."""
    if not weeks or any(w.saved_list_usd is None for w in weeks):
        return ""
    bill, listed = sum(w.saved_usd for w in weeks), sum(w.saved_list_usd or 0.0 for w in weeks)
    return f" on the bill ({usd(listed)} at on-demand prices)" if abs(listed - bill) >= 0.005 else ""


def _rows(weeks: Sequence[AccountWeek]) -> list[str]:
    rows: list[str] = []
    for w in weeks:
        spend = f"; spend {usd(w.spend_usd)}" if w.spend_usd is not None else ""
        rows.append(
            mrkdwn("*{0}*: ", w.name)
            + f"{w.machines} machine{'' if w.machines == 1 else 's'}, {w.gpu_hours:,.0f} GPU-h at "
            f"{_pct(w.avg_gpu_util)}, idle {w.idle_gpu_hours:,.0f} GPU-h, waste {usd(w.waste_usd)}; "
            f"{w.stopped} stopped, {usd(w.saved_usd)} saved" + spend
        )
    return rows


def _top_owners(weeks: Sequence[AccountWeek], limit: int = 5) -> list[str]:
    everyone = sorted(
        ((o, w) for w in weeks for o in w.top_owners), key=lambda ow: (-ow[0].waste_usd, ow[0].owner, ow[1].account)
    )
    return [
        mrkdwn("{0} in {1}: ", o.owner, w.name) + f"idle {o.idle_gpu_hours:,.0f} GPU-h, {usd(o.waste_usd)}"
        for o, w in everyone[:limit]
    ]


def _missing(org: OrganizationWeek) -> str:
    lines = [
        (
            mrkdwn("`{0}`: last figures {1}", account, when(last.end, style=DAY))
            if last is not None
            else mrkdwn("`{0}`: never reported", account)
        )
        + (mrkdwn(": {0}", org.why[account]) if account in org.why else Mrkdwn(""))
        for account, last in org.missing
    ]
    return Mrkdwn(
        f":warning: *No figures this week from {plural(len(org.missing), 'account')}*, so the totals leave them out. "
        "Their weekly digest did not hand its week over: see that account's costguard logs and dead-letter "
        "queue.\n"
    ) + bullet_list(lines)
