"""Slack messages of the idle stopper, in one voice. Pure functions of records.

A warning is a live part (slack/live.py): what it costs a day first, one idle time, its owner named by
mention (by name where Slack does not know them, never by address, never `root`), and what is true now in
one status line, which a stop, a keep or a start later changes in place. The detail a person rarely needs
(what idle was judged on, the tags, the price's caveats) is one context line. Every time is Slack's own
(`when`): each reader sees it in their own zone, and `zone` (the team's) is the fallback's.
"""

from __future__ import annotations

from datetime import datetime

from costguard.core import formatting, tags
from costguard.core.formatting import duration
from costguard.core.keeping import kept_for_runs
from costguard.core.money import Basis, Marginal
from costguard.core.records import Instance, Price
from costguard.core.settings import Mode
from costguard.idle.rules.automation import BLIND, LET_IT_SEE
from costguard.idle.rules.decision import Decision
from costguard.idle.words.money import saving_line
from costguard.slack import live
from costguard.slack.blocks import NOTHING, Message, Mrkdwn, context, mrkdwn, person, safe, section, times_in, when
from costguard.slack.buttons import start_buttons, warning_buttons, why_button
from costguard.slack.live import Part, Phase, cost_a_day

NOUN = "GPU machine"
TAGS = f"Or tag `{tags.KEEP_UNTIL}` (a UTC time), `{tags.KEEP_FOR_RUNS}=on` or `{tags.EXEMPT}`."
JUDGED = "Judged on every GPU, the busiest core and the network."


def machine(instance: Instance) -> Mrkdwn:
    """ "g5.12xlarge `i-0abc…` (train-bert)": its type, its id, its Name tag."""
    name = instance.tags.get("Name", "")
    return mrkdwn("{} `{}`", instance.instance_type, instance.instance_id) + (mrkdwn(" ({})", name) if name else "")


def daily(decision: Decision, price: Price) -> float | None:
    """What it costs a day to leave running: on the bill where the decision was priced on it, else listed."""
    hourly = decision.bill.usd_per_hour if decision.bill is not None else price.usd_per_hour
    return hourly * 24 if hourly is not None else None


def idle_for(decision: Decision, now: datetime) -> str:
    return duration(decision.judgement.idle_minutes(now)) if decision.judgement is not None else "a while"


def sentence(who: Mrkdwn, instance: Instance, idle: str) -> Mrkdwn:
    if who:
        return mrkdwn("{}, your {} has done no work for *{}*.", who, machine(instance), idle)
    return mrkdwn("{} has done no work for *{}*. Its owner is unknown.", machine(instance), idle)


def line(who: Mrkdwn, instance: Instance, idle: str, cost: float | None) -> Mrkdwn:
    """A machine among others, cost first; its owner named only where the message is not theirs already."""
    owner = "" if who.startswith("<@") else (f" · owner {who}" if who else " · owner unknown")
    return mrkdwn("*{}* · {} · no work for {}", cost_a_day(cost), machine(instance), idle) + Mrkdwn(owner)


def settled_sentence(who: Mrkdwn, instance: Instance) -> Mrkdwn:
    """Who and what, once kept, at work or started again: its idleness is no longer what is true."""
    if who:
        return mrkdwn("{}, your {}.", who, machine(instance))
    return mrkdwn("{}. Its owner is unknown.", machine(instance))


def settled_line(who: Mrkdwn, instance: Instance, cost: float | None) -> Mrkdwn:
    owner = "" if who.startswith("<@") else (f" · owner {who}" if who else " · owner unknown")
    return mrkdwn("*{}* · {}", cost_a_day(cost), machine(instance)) + Mrkdwn(owner)


def idle_warning(
    instance: Instance,
    decision: Decision,
    price: Price,
    who: Mrkdwn,
    now: datetime,
    *,
    hours: str | None = None,
    whose: str = "your time",
    zone: str = "UTC",
    mode: Mode = Mode.ENFORCE,
) -> Part:
    """The warning. `who`: the owner (slack.blocks.person); `hours`: working hours its starts and stops of the
    last two weeks suggest, offered; `whose`: whose clock the keep buttons read ("your time", "Paris time").
    In notify-only `mode` costguard stops (and so starts) nothing: the warning says what it would do in enforce
    mode, with no keep (nothing to keep it from) and no stop (the buttons worker refuses it): its *Why?* alone."""
    idle = idle_for(decision, now)
    iid = instance.instance_id
    start_at = formatting.format_time(decision.start_at) if decision.start_at else ""
    acts = mode is not Mode.NOTIFY_ONLY
    promise = _restart(decision, now, zone) if acts else NOTHING
    buttons = warning_buttons(
        iid,
        instance.region,
        decision.will_stop,
        instance.account,
        start_at=start_at,
        whose=whose,
        for_runs=bool(decision.runs) and decision.will_stop,
        kept_for_runs=kept_for_runs(instance.tags),
    )
    if not acts:
        buttons = []
    buttons.append(why_button(iid, instance.region, instance.account, decided=now.isoformat()))
    return Part(
        key=iid,
        marker="",
        noun=NOUN,
        daily=daily(decision, price),
        sentence=sentence(who, instance, idle),
        line=line(who, instance, idle, daily(decision, price)),
        status=warned(instance, decision, zone, mode) + (Mrkdwn(" ") + promise if promise else NOTHING),
        promise=promise,
        buttons=tuple(buttons),
        detail=_detail(decision, price, hours, now, keeps=acts),
        settled_sentence=settled_sentence(who, instance),
        settled_line=settled_line(who, instance, daily(decision, price)),
    )


def warned(instance: Instance, decision: Decision, zone: str, mode: Mode = Mode.ENFORCE) -> Mrkdwn:
    """What a warning says is coming: the stop and its time, or that there will be none (the start promised after
    the stop is the part's promise, apart); in notify-only, the stop enforce mode would make, and none made."""
    if decision.will_stop and decision.stop_after is not None and mode is Mode.NOTIFY_ONLY:
        return (
            Mrkdwn("In enforce mode costguard would stop it *")
            + when(decision.stop_after, zone)
            + Mrkdwn("*; in notify-only mode it stops nothing.")
        )
    if decision.will_stop and decision.stop_after is not None:
        status = Mrkdwn("costguard stops it *") + when(decision.stop_after, zone) + Mrkdwn("* unless you keep it.")
        if instance.hibernation_configured:
            status += Mrkdwn(" It hibernates: its memory is kept.")
    else:
        status = Mrkdwn("costguard will not stop it: it reports no GPU use to judge by.")
    return status + _no_runs_known(instance, decision)


def _no_runs_known(instance: Instance, decision: Decision) -> Mrkdwn:
    """A machine its owner keeps for its runs, none of which costguard knows: stopped as any other, and said."""
    if not decision.will_stop or decision.runs or not kept_for_runs(instance.tags):
        return Mrkdwn("")
    return Mrkdwn(
        f" It is kept for its runs (`{tags.KEEP_FOR_RUNS}`), but costguard knows none: no scheduled job on it, no "
        "recurring work learned, so nothing holds the stop."
    )


def _restart(decision: Decision, now: datetime, zone: str) -> Mrkdwn:
    """The start costguard promises after its stop, for the work it learned recurs (or the working day)."""
    if not decision.next_work or decision.start_at is None:
        return Mrkdwn("")
    before = decision.start_for.value
    return (
        Mrkdwn("It ")
        + times_in(decision.next_work, now, reader=zone)
        + Mrkdwn(": costguard starts it again *")
        + when(decision.start_at, zone)
        + Mrkdwn(f"*, before {before}.")
    )


def _detail(decision: Decision, price: Price, hours: str | None, now: datetime, *, keeps: bool = True) -> Mrkdwn:
    """The one context line: what idle was judged on, the tags that keep it (`keeps`: where there is a stop to keep
    it from), and what the price or the judgement lacks."""
    said = [Mrkdwn(JUDGED), *([Mrkdwn(TAGS)] if keeps else [])]
    if decision.bill is not None and _priced_apart(decision.bill):
        said.append(times_in(saving_line(decision.bill, decision.worth) + ".", now))  # its times each reader's
    elif price.source == "bundled":
        said.append(Mrkdwn("Cost is a list price: the Pricing API could not be reached."))
    if decision.gpus_from_check and decision.will_stop:
        said.append(Mrkdwn("No GPU metrics: its GPUs were judged by its own activity check."))
    elif decision.judgement and not any(s.label.startswith("GPU") for s in decision.judgement.signals):
        said.append(Mrkdwn("No GPU metrics: install the CloudWatch agent with `docs/cloudwatch-agent.json`."))
    if decision.blind and decision.will_stop:
        said.append(Mrkdwn(f"Judged from its metrics alone: {BLIND}; to let it see, {LET_IT_SEE}."))
    if decision.early or decision.activity.startswith("activity check did not answer"):
        # Why it is warned sooner than the window (or why a stop may wait): the machine's own word.
        said.append(times_in(decision.activity[:1].upper() + decision.activity[1:] + ".", now))
    if hours:
        said.append(
            mrkdwn("Keeps regular hours? Tag it `{0}={1}`: costguard starts it before them.", tags.SCHEDULE, hours)
        )
    return Mrkdwn(" ".join(said))


def _priced_apart(bill: Marginal) -> bool:
    """A saving worth its words: not simply the list price on demand (a Reserved Instance, a plan, Spot, a
    hold), or one the bill could not be fully read for (said, never hidden)."""
    plain = bill.basis is Basis.ON_DEMAND and not bill.caveat
    return not (plain and bill.on_demand is not None and bill.usd_per_hour == bill.on_demand)


def stopped_part(
    instance: Instance, decision: Decision, price: Price, who: Mrkdwn, now: datetime, *, zone: str
) -> Part:
    """A machine costguard stopped: what it was, and what is true now (stopped, its disks or memory kept, the
    start promised), with what undoes it."""
    idle = idle_for(decision, now)
    cost = daily(decision, price)
    base = Part(
        key=instance.instance_id,
        marker="",
        noun=NOUN,
        daily=cost,
        sentence=sentence(who, instance, idle),
        line=line(who, instance, idle, cost),
        status="",
        detail=times_in(saving_line(decision.bill, decision.worth) + ".", now) if decision.bill is not None else "",
        settled_sentence=settled_sentence(who, instance),
        settled_line=settled_line(who, instance, cost),
    )
    return live.settled(stopped(instance, decision, now, zone), base)


def stopped(instance: Instance, decision: Decision, now: datetime, zone: str) -> live.Change:
    """The change a stop makes to a machine's part: stopped by costguard, what is kept, the start it promised
    for the work it learned recurs, and the buttons that undo it."""
    word = "Hibernated" if decision.hibernate else "Stopped"
    kept = "Its memory is kept: it resumes where it was." if decision.hibernate else "Its disks are kept."
    note = Mrkdwn(kept)
    promised = decision.start_at is not None
    for_runs = kept_for_runs(instance.tags)  # its owner's word: started before its runs, and no choice to offer
    buttons = start_buttons(
        instance.instance_id,
        instance.region,
        instance.account,
        learned_start=promised and not for_runs,
        for_runs=promised and bool(decision.runs) and not for_runs,
    )
    buttons.append(why_button(instance.instance_id, instance.region, instance.account, decided=now.isoformat()))
    return live.stopped(
        now, NOTHING, zone, word=word, note=note, buttons=buttons, promise=_restart(decision, now, zone)
    )


def told_above(part: Part) -> Part:
    """A stop told again as a reply under its warning, which now shows it (and its buttons): no buttons here. A
    reply is never changed, so it says what stays true (the stop, what it kept), not what is to come (a start
    promised, a button to press), which the warning above follows as it changes."""
    told = part.unpromised()
    return told.now(Mrkdwn(told.status) + Mrkdwn(" The warning above shows what follows."), told.phase, told.word)


def cancelled(decision: Decision, now: datetime) -> live.Change:
    """A warned machine the activity check found at work: not stopped, and why."""
    return live.at_work(times_in(decision.activity or decision.reason, now))


def cancelled_part(instance: Instance, decision: Decision, price: Price, who: Mrkdwn, now: datetime) -> Part:
    """The same, told as a message of its own where the warning cannot be changed in place."""
    base = Part(
        key=instance.instance_id,
        marker="",
        noun=NOUN,
        daily=daily(decision, price),
        sentence=mrkdwn("{}, your {} is not stopped after all.", who, machine(instance))
        if who
        else mrkdwn("{} is not stopped after all.", machine(instance)),
        line=line(who, instance, idle_for(decision, now), daily(decision, price)),
        status="",
    )
    return live.settled(cancelled(decision, now), base)


def cleared(instance: Instance, now: datetime, zone: str) -> live.Change:
    """A warned machine no longer to be stopped, without a click: kept by a tag, exempt, or at work again."""
    by = person(instance.tags.get(tags.KEPT_BY, ""))
    if tags.EXEMPT in instance.tags:
        return live.exempt(instance.tags[tags.EXEMPT] or "tagged")
    until = formatting.parse_time(instance.tags.get(tags.KEEP_UNTIL))
    if until is not None and until > now:
        return live.kept(until, by, zone, how=f"tag `{tags.KEEP_UNTIL}`")
    if tags.KEEP_WHILE_BUSY in instance.tags:
        return live.kept(None, by, zone)
    status = Mrkdwn("At work again: costguard does not stop it.")
    return lambda part: part.now(status, Phase.RUNNING, "At work")


def not_stopped_notice(instance: Instance, decision: Decision, mode: str, owner: str) -> Message:
    """notify-only or dry-run: a machine still idle after its grace period, not stopped (to the alerts channel)."""
    iid = instance.instance_id
    who = person(owner) or Mrkdwn("nobody")
    return Message(
        f"[{mode}] {instance.instance_type} {iid} is still idle after the grace period; not stopped",
        (
            section(
                mrkdwn("*[{}]* {}, owner {}, is still idle after the grace period. ", mode, machine(instance), who)
                + f"In {mode} mode costguard does not stop it. "
                + times_in(decision.reason, decision.stop_after or instance.launch_time)
            ),
        ),
    )


def dry_run_notice(instance: Instance, decision: Decision, price: Price, owner: str, zone: str = "UTC") -> Message:
    """dry-run: the warning costguard would send, and the stop it would make (to the alerts channel)."""
    iid = instance.instance_id
    who = person(owner) or Mrkdwn("the alerts channel")
    plan = mrkdwn("warn {}", who)
    plan += (
        Mrkdwn(" and stop it ") + when(decision.stop_after, zone) + Mrkdwn(" if still idle")
        if decision.stop_after
        else Mrkdwn(" (it would not be stopped: no GPU metrics)")
    )
    cost = daily(decision, price)
    return Message(
        mrkdwn("[dry-run] would warn {} about idle {} {}", who, instance.instance_type, iid),
        (section(mrkdwn("*[dry-run]* *{}* · would {}: {}.", cost_a_day(cost), plan, machine(instance))),),
    )


def stop_failed_notice(instance: Instance, error: str, owner: str) -> Message:
    who = person(owner) or Mrkdwn("unknown")
    return Message(
        f"Could not stop idle {instance.instance_type} {instance.instance_id}: {error}",
        (
            section(
                mrkdwn(
                    ":warning: costguard could not stop idle {} (owner {}): `{}`. It keeps running and costing; "
                    "someone should look.",
                    machine(instance),
                    who,
                    error,
                )
            ),
        ),
    )


def schedule_unreadable_notice(instance: Instance, reason: str, who: Mrkdwn) -> Message:
    """The owner's working hours could not be read: the machine is kept (never stopped) until they can."""
    iid = instance.instance_id
    value = instance.tags.get(tags.SCHEDULE, "")
    text = f"costguard cannot read the working hours of {iid}: it keeps the machine until it can"
    subject = mrkdwn("{}, your {}", who, machine(instance)) if who else machine(instance)
    return Message(
        text,
        (
            section(
                subject
                + mrkdwn(" has `{}={}`, which costguard cannot read: {}. ", tags.SCHEDULE, value, reason)
                + "It is never stopped while this lasts."
            ),
            context(
                "Write it as `<days> HH:MM-HH:MM <time zone>`, e.g. `weekdays 08:30-19:00 Europe/Berlin`; "
                "several windows with `;`."
            ),
        ),
    )


def morning_start_note(instance: Instance, opens: datetime, who: Mrkdwn, zone: str = "UTC") -> Message:
    """The owner's machine was started for their working hours (MorningNote)."""
    hours = instance.tags.get(tags.SCHEDULE, "")
    subject = mrkdwn("{}, your {}", who, machine(instance)) if who else machine(instance)
    return Message(
        Mrkdwn("Started ") + safe(f"{instance.instance_id} for working hours that open ") + when(opens, zone),
        (
            section(
                Mrkdwn("Good morning: ")
                + subject
                + mrkdwn(" is starting for its working hours (`{}`), which open ", hours)
                + when(opens, zone)
                + Mrkdwn(". Never warned or stopped inside them.")
            ),
        ),
    )
