"""Each owner's week, and the one direct message a person gets about it. Pure: records in, a message out.

An owner's week is what one account's digest found of their machines (figures, the machines idle the
longest, keeps that outlived the work, starts EC2 refused, advice), in plain fields: the weekly digest
messages its owners from it, and where a hub collects the organization's week, hands it to the hub
instead, which messages each person once with every account's part (digest/handoff.py carries it).

A message goes only to an owner with something to act on: idle time that cost OWNER_MESSAGE_MIN_USD or
more on the bill, or a keep, a refused start or a suggestion about one of their machines. A week of
"$0.00 idle" is not worth an interruption (the deployment can still ask for every owner's week).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from costguard.core.formatting import plural, usd
from costguard.slack.blocks import Block, Message, Mrkdwn, bullet_list, context, mrkdwn, section, times_in, when

OWNER_MESSAGE_MIN_USD = 10.0  # about ten idle hours of a one-GPU machine
SHOWN = 3  # of each kind of line, in a message and in a hand-off

SPOT_WARNING = ":warning: Spot can be taken back at two minutes' notice: move only jobs that checkpoint and resume."


@dataclass(frozen=True)
class IdleMachine:
    instance_id: str
    instance_type: str
    idle_hours: float
    usd_per_day: float  # what a day of it costs on the bill while it runs


@dataclass(frozen=True)
class KeptIdle:
    """A keep pressed in Slack that outlived the work."""

    instance_id: str
    until: datetime
    kept_hours: float
    idle_hours: float
    waste_usd: float


@dataclass(frozen=True)
class RefusedStart:
    instance_id: str
    instance_type: str
    owner: str
    due: datetime
    why: str  # EC2's refusal
    ended: str  # how it ended: "started from Slack", "not started: costguard gave up", ...
    ended_at: datetime | None = None  # when that was, where a time belongs to it


@dataclass(frozen=True)
class Suggestion:
    """Right-sizing, Spot or working hours for one machine (digest/weekly/rules/advice.py's Advice)."""

    instance_id: str
    instance_type: str
    kind: str  # "fewer-gpus", "cheaper-gpu", "spot" or "schedule"
    suggested: str
    now_usd: float
    then_usd: float
    saving_usd: float
    basis: str


@dataclass(frozen=True)
class OwnerWeek:
    owner: str  # the owner tag's value in the account
    email: str  # who they are to Slack (core/people.py); "" when the tag names no one Slack can know
    account: str  # the account's id; "" in an account's own digest
    account_name: str  # "training (123456789012)"; ""
    machines: int
    gpu_hours: float
    avg_gpu_util: float | None
    idle_gpu_hours: float
    waste_usd: float
    paid_idle_hours: float = 0.0
    warned: int = 0
    idle: tuple[IdleMachine, ...] = ()
    keeps: tuple[KeptIdle, ...] = ()
    refused: tuple[RefusedStart, ...] = ()
    advice: tuple[Suggestion, ...] = ()

    @property
    def to_act_on(self) -> bool:
        """Idle time worth stopping, or something about one of their machines to do."""
        return self.waste_usd >= OWNER_MESSAGE_MIN_USD or bool(self.keeps or self.refused or self.advice)


def owner_message(weeks: Sequence[OwnerWeek], basis: Mapping[str, str], *, now: datetime) -> Message:
    """One person's week: every account's part of it (one, in an account's own digest), money first.
    `basis` is each account's price-basis line, by account id ("" for an account's own digest); `now`, the
    day whose clock a suggestion's working hours are shown on."""
    weeks = merged(weeks)
    waste = sum(w.waste_usd for w in weeks)
    several = len(weeks) > 1
    blocks: list[Block] = []
    if several and _nothing(waste):
        blocks.append(section(f"*Your GPU week* across {len(weeks)} accounts: no idle time cost anything."))
    elif several:
        blocks.append(
            section(
                mrkdwn(
                    "*Your GPU week*: idle machines cost you *{0}* across {1} accounts: what stopping them while "
                    "idle would have saved.",
                    usd(waste),
                    len(weeks),
                )
            )
        )
    for week in weeks:
        blocks += _account_part(week, several, priced(basis.get(week.account, "")), now)
    if any(w.advice and any(a.kind == "spot" for a in w.advice) for w in weeks):
        blocks.append(context(SPOT_WARNING))
    blocks.append(context("Stop what you are not using; tag `costguard:keep-until` what you are. — costguard"))
    lines = list(dict.fromkeys(b for w in weeks if (b := basis.get(w.account, ""))))
    if lines:
        blocks.append(context(*lines[:3]))
    where = {priced(basis.get(w.account, "")) for w in weeks}
    if _nothing(waste):
        return Message(f"Your GPU week: {_news(weeks)}", tuple(blocks))
    return Message(f"Your GPU week: {usd(waste)} idle {where.pop() if len(where) == 1 else ''}".strip(), tuple(blocks))


def _nothing(amount: float) -> bool:
    """An amount a message would show as $0.00: never the lead of a message whose news is elsewhere."""
    return round(amount, 2) == 0


def _news(weeks: Sequence[OwnerWeek]) -> str:
    """What a week whose idle time cost nothing is about, for its preview: the largest saving suggested, a keep
    that outlived the work, a start EC2 refused."""
    advice = [a for w in weeks for a in w.advice]
    if advice:
        return f"the same work for {usd(max(a.saving_usd for a in advice))} less"
    keeps = sum(len(w.keeps) for w in weeks)
    if keeps:
        return f"{plural(keeps, 'keep')} outlived the work"
    refused = sum(len(w.refused) for w in weeks)
    if refused:
        return f"EC2 refused {plural(refused, 'start')}"
    return "no idle time cost anything"


def merged(weeks: Sequence[OwnerWeek]) -> list[OwnerWeek]:
    """One week an account: a person's machines under two owner tags of one account ("carol" and
    "carol@example.com") are one part of their message. In the order the accounts came."""
    by_account: dict[str, list[OwnerWeek]] = {}
    for week in weeks:
        by_account.setdefault(week.account, []).append(week)
    return [theirs[0] if len(theirs) == 1 else _together(theirs) for theirs in by_account.values()]


def _together(weeks: Sequence[OwnerWeek]) -> OwnerWeek:
    hours = sum(w.gpu_hours for w in weeks if w.avg_gpu_util is not None)
    util = sum((w.avg_gpu_util or 0.0) * w.gpu_hours for w in weeks) / hours if hours else None
    return replace(
        weeks[0],
        owner=", ".join(w.owner for w in weeks),
        machines=sum(w.machines for w in weeks),
        gpu_hours=sum(w.gpu_hours for w in weeks),
        avg_gpu_util=util,
        idle_gpu_hours=sum(w.idle_gpu_hours for w in weeks),
        waste_usd=sum(w.waste_usd for w in weeks),
        paid_idle_hours=sum(w.paid_idle_hours for w in weeks),
        warned=sum(w.warned for w in weeks),
        idle=tuple(sorted((m for w in weeks for m in w.idle), key=lambda m: -m.idle_hours * m.usd_per_day)),
        keeps=tuple(k for w in weeks for k in w.keeps),
        refused=tuple(r for w in weeks for r in w.refused),
        advice=tuple(sorted((a for w in weeks for a in w.advice), key=lambda a: -a.saving_usd)),
    )


def priced(basis: str) -> str:
    """Where an account's dollars come from, in a few words: its bill, or the list when its bill was not read."""
    return "at on-demand list prices" if basis.startswith("Prices: on-demand list") else "on the bill"


def _account_part(week: OwnerWeek, named: bool, prices: str, now: datetime) -> list[Block]:
    title = mrkdwn("*{0}*: ", week.account_name or week.account) if named else Mrkdwn("")
    use = f"at {week.avg_gpu_util:.0f}% average use" if week.avg_gpu_util is not None else "(GPU use not measured)"
    fleet = f"{plural(week.machines, 'machine')}, {week.gpu_hours:,.0f} GPU-hours {use}"
    if _nothing(week.waste_usd):
        body = title + f"{fleet}; no idle time cost anything {prices}."
    else:
        body = title + (
            f"idle machines cost *{usd(week.waste_usd)}* {prices} ({week.idle_gpu_hours:,.0f} idle GPU-hours)"
            + ("" if named else ": what stopping them while idle would have saved")
            + f". {fleet[:1].upper()}{fleet[1:]}."
        )
    if week.paid_idle_hours:
        body += f" {week.paid_idle_hours:,.0f} idle machine-hours were on capacity already paid: not stopped for money."
    if week.warned:
        body += f" costguard warned you about {plural(week.warned, 'idle machine')} this week."
    blocks: list[Block] = [section(body if named else Mrkdwn("*Your GPU week*: ") + body)]
    if week.idle:
        lines = [
            mrkdwn(
                "`{0}` {1}: idle {2} h this week, {3}/day while it runs",
                m.instance_id,
                m.instance_type,
                f"{m.idle_hours:.0f}",
                usd(m.usd_per_day),
            )
            for m in week.idle[:SHOWN]
        ]
        blocks.append(section(Mrkdwn("*Idle the longest, still running*\n") + bullet_list(lines)))
    if week.keeps:
        lines = [
            mrkdwn(
                "`{0}` kept until {1} sat idle {2} h of its {3} ({4})",
                k.instance_id,
                when(k.until),
                f"{k.idle_hours:.0f}",
                f"{k.kept_hours:.0f}",
                usd(k.waste_usd),
            )
            for k in week.keeps[:SHOWN]
        ]
        blocks.append(
            section(
                Mrkdwn("*Kept, then idle*: a shorter keep, or *Keep while it works*, next time\n") + bullet_list(lines)
            )
        )
    if week.refused:
        blocks.append(section(refused_starts_text(week.refused, owners=False)))
    if week.advice:
        lines = [suggestion_line(a, now=now) for a in week.advice[:SHOWN]]
        blocks.append(section(Mrkdwn("*Worth a look*: the same work for less\n") + bullet_list(lines)))
    return blocks


def refused_starts_text(starts: Sequence[RefusedStart], *, owners: bool = True, shown: int = 10) -> Mrkdwn:
    """Every start EC2 refused: machine (and owner, in the channel), when it was due, why, how it ended."""
    lines = [
        mrkdwn(
            "`{0}` {1}{2}, due {3}: {4}; {5}",
            f.instance_id,
            f.instance_type,
            f" ({f.owner or 'no owner'})" if owners else "",
            when(f.due),
            times_in(f.why, f.due),  # EC2's refusal, "last at 12:50 UTC": near the time it was due
            mrkdwn("{0} {1}", f.ended, when(f.ended_at)) if f.ended_at is not None else f.ended,
        )
        for f in starts[:shown]
    ]
    if len(starts) > shown:
        lines.append(Mrkdwn(f"and {len(starts) - shown} more"))
    return Mrkdwn(f"*Failed starts* ({plural(len(starts), 'start')} EC2 refused)\n") + bullet_list(lines)


def suggestion_line(advice: Suggestion, owner: str | None = None, *, now: datetime) -> Mrkdwn:
    """One suggestion, with the figures it rests on (the hours a machine worked within, on the reader's clock
    as it is `now`); `owner` named after the machine (in the channel)."""
    who = f" ({owner or 'no owner'})" if owner is not None else ""
    basis = times_in(advice.basis[:1].upper() + advice.basis[1:], now)
    if advice.kind == "schedule":
        return mrkdwn(
            "`{0}` {1}{2}: tag it `costguard:schedule` = `{3}`: costguard starts it before those hours and "
            "never warns about it in them; outside them a stop saves {4}/h, *{5}* this week. {6}",
            advice.instance_id,
            advice.instance_type,
            who,
            advice.suggested,
            usd(advice.now_usd),
            usd(advice.saving_usd),
            basis,
        )
    return mrkdwn(
        "`{0}` {1}{2}: *{3}* instead, {4}/h rather than {5}/h, *{6} less* this week. {7}",
        advice.instance_id,
        advice.instance_type,
        who,
        "Spot" if advice.kind == "spot" else advice.suggested,
        usd(advice.then_usd),
        usd(advice.now_usd),
        usd(advice.saving_usd),
        basis,
    )
