"""Slack messages of the idle stopper. Pure functions of records: they say what, why, what it costs,
and how to keep the machine."""

from __future__ import annotations

from datetime import datetime, timedelta

from costguard.core import formatting, tags
from costguard.core.formatting import duration
from costguard.core.records import Instance, Price
from costguard.idle.rules.capacity import READY
from costguard.idle.rules.decision import Decision
from costguard.idle.words.money import saving_line
from costguard.slack.blocks import Block, Message, actions, context, fields_section, header, mrkdwn, section
from costguard.slack.buttons import start_buttons, warning_buttons

# Blocks a message gathering several machines' notices leaves out: each one's title (the gathered message
# has its own) and the warning's how-to (said once, for all, at its end).
TITLE, HOW_TO_KEEP = "cg-title", "cg-howto"


def titled(block: Block) -> Block:
    return {**block, "block_id": TITLE}


def _name(instance: Instance) -> str:
    name = instance.tags.get("Name", "")
    return f" ({name})" if name else ""


def _cost(price: Price) -> str:
    if price.usd_per_hour is None:
        return "price unknown"
    return f"{price.text()} · ${price.usd_per_hour * 24:,.0f}/day"


def _keep_cli(instance: Instance, until: datetime) -> str:
    return (
        f"aws ec2 create-tags --region {instance.region} --resources {instance.instance_id} "
        f"--tags Key={tags.KEEP_UNTIL},Value={formatting.format_time(until)}"
    )


def idle_warning(
    instance: Instance, decision: Decision, price: Price, owner: str, now: datetime, *, hours: str | None = None
) -> Message:
    """The warning; `hours`: working hours its starts and stops of the last two weeks suggest, offered."""
    judgement = decision.judgement
    idle = duration(judgement.idle_minutes(now)) if judgement else "?"
    why = judgement.reason if judgement else decision.reason
    iid = instance.instance_id
    if decision.will_stop and decision.stop_after is not None:
        stop = decision.stop_after
        minutes = int((stop - now).total_seconds() // 60)
        title = f"Idle GPU machine: stopping it at {stop:%H:%M} UTC"
        text = (
            f"{instance.instance_type} {iid} has been idle for {idle}; "
            f"costguard stops it at {stop:%H:%M} UTC unless you keep it"
        )
        when = f"*Stops at*\n{stop:%H:%M} UTC (in {duration(minutes)})" + (
            "; hibernates, so memory is kept" if instance.hibernation_configured else ""
        )
    else:
        title = "Idle GPU machine"
        text = f"{instance.instance_type} {iid} has been idle for {idle}"
        when = "*Stops at*\nnever automatically: it publishes no GPU metrics"
    keep_until = now + timedelta(hours=4)
    blocks = [
        titled(header(title)),
        section(f"{_subject(owner, instance)} has done no work for *{idle}*."),
        fields_section(
            [
                f"*Type*\n{instance.instance_type} in {instance.region}",
                f"*Saves*\n{saving_line(decision.bill)}" if decision.bill else f"*Cost*\n{_cost(price)}",
                f"*Why*\n{why}",
                when,
            ]
        ),
        {
            **section(
                "*To keep it*, press a button below, or tag it before then:\n"
                f"• `{tags.KEEP_UNTIL}=<time>` keeps it until that time (ISO 8601, UTC)\n"
                f"• `{tags.EXEMPT}=<reason>` keeps it for good\n"
                f"```{_keep_cli(instance, keep_until)}```"
            ),
            "block_id": HOW_TO_KEEP,
        },
    ]
    if decision.activity:
        blocks.insert(3, section(f"*On the machine*\n{decision.activity}"))
    if decision.learned and decision.start_at is not None and decision.stop_after is not None:
        blocks.append(learned_section(decision, decision.stop_after))
    if hours:
        blocks.append(
            section(
                mrkdwn("*Keeps regular hours?* Tag it `{0}` = `{1}`: ", tags.SCHEDULE, hours)
                + "costguard then starts it shortly before they open and never warns about it inside them "
                "(started and stopped at about those hours on several days of the last two weeks)."
            )
        )
    start_at = formatting.format_time(decision.start_at) if decision.start_at else ""
    buttons = warning_buttons(iid, instance.region, decision.will_stop, instance.account, start_at=start_at)
    blocks.append(actions(f"costguard:{iid}", buttons))
    notes = []
    if decision.gpus_from_check and decision.will_stop:
        notes.append(
            "No GPU metrics: its GPUs were judged from the machine's own activity check (every GPU at 0 % and no "
            "process on them, check after check). The CloudWatch agent's nvidia_gpu plugin would show them."
        )
    elif decision.judgement and not any(s.label.startswith("GPU") for s in decision.judgement.signals):
        notes.append(
            "No GPU telemetry: judged on CPU, so costguard will not stop it. Install the CloudWatch agent "
            "with costguard's configuration, docs/cloudwatch-agent.json, to have idle GPUs seen."
        )
    if price.source == "bundled":
        notes.append("Cost is an approximate list price: the Pricing API could not be reached.")
    if notes:
        blocks.append(context(" ".join(notes)))
    return Message(text, tuple(blocks))


def stop_notice(instance: Instance, decision: Decision, price: Price, owner: str, now: datetime) -> Message:
    judgement = decision.judgement
    idle = duration(judgement.idle_minutes(now)) if judgement else "?"
    verb = "Hibernated" if decision.hibernate else "Stopped"
    iid = instance.instance_id
    saving = f"${price.usd_per_hour:,.2f}/h" if price.usd_per_hour is not None else "its hourly cost"
    start = f"aws ec2 start-instances --region {instance.region} --instance-ids {iid}"
    kept = "Memory is kept: it resumes where it was." if decision.hibernate else "Its EBS volumes are kept."
    return Message(
        f"{verb} idle {instance.instance_type} {iid} after {idle} without work",
        (
            titled(header(f"{verb} idle GPU machine {iid}")),
            section(
                f"{_subject(owner, instance)} was still idle after the warning, so costguard {verb.lower()} it. {kept}"
            ),
            fields_section(
                [
                    f"*Type*\n{instance.instance_type} in {instance.region}",
                    f"*Saves*\n{saving_line(decision.bill) if decision.bill else saving}",
                    f"*Idle for*\n{idle}",
                    f"*Why*\n{judgement.reason if judgement else decision.reason}",
                ]
            ),
            *([learned_section(decision, now)] if decision.learned and decision.start_at is not None else []),
            section(f"*To start it again*, press the button or run\n```{start}```"),
            actions(
                f"costguard:{iid}",
                start_buttons(iid, instance.region, instance.account, learned_start=decision.start_at is not None),
            ),
        ),
    )


def learned_section(decision: Decision, stop: datetime) -> Block:
    """What costguard learned recurs on the machine, and when it starts it again for it (and how not to)."""
    start_at = decision.start_at or stop
    before = "the working day" if decision.learned.startswith(READY) else "its next run"
    return section(
        mrkdwn(
            "*{0}* It {1}: ", "Hard to get back" if before == "the working day" else "Recurring work", decision.learned
        )
        + f"costguard stops it at {stop:%H:%M} UTC and starts it again at *{start_at:%a %H:%M} UTC*, before {before}. "
        f"To keep it stopped, press *Don't start it* or tag it `{tags.LEARNED_START}={tags.OFF}`."
    )


def stop_cancelled_notice(instance: Instance, decision: Decision, owner: str) -> Message:
    """A warned machine that the activity check found at work: it stays up, and the owner learns why."""
    iid = instance.instance_id
    found = decision.activity or decision.reason
    return Message(
        f"Not stopping {instance.instance_type} {iid}: {found}",
        (
            section(
                f":white_check_mark: {_subject(owner, instance)} is not stopped after all: its metrics looked "
                f"idle, but on the machine {found}. The warning is withdrawn; costguard will warn again "
                "only after a whole idle window."
            ),
        ),
    )


def not_stopped_notice(instance: Instance, decision: Decision, mode: str, owner: str) -> Message:
    iid = instance.instance_id
    return Message(
        f"[{mode}] {instance.instance_type} {iid} is still idle after the grace period; not stopped",
        (
            section(
                f"*[{mode}]* `{iid}`{_name(instance)} ({instance.instance_type}, "
                f"owner {owner or 'unknown'}) is still idle after the grace period. "
                f"In {mode} mode costguard does not stop it.\n"
                f"{decision.reason}"
            ),
        ),
    )


def dry_run_notice(instance: Instance, decision: Decision, price: Price, owner: str) -> Message:
    iid = instance.instance_id
    plan = (
        f"warn {owner or 'the alerts channel'} and stop it {decision.stop_after:%H:%M} UTC if still idle"
        if decision.stop_after
        else f"warn {owner or 'the alerts channel'} (it would not be stopped: no GPU metrics)"
    )
    return Message(
        f"[dry-run] would {plan.split(' and ', maxsplit=1)[0]} about idle {instance.instance_type} {iid}",
        (
            section(
                f"*[dry-run]* Would {plan}: `{iid}`{_name(instance)} {instance.instance_type} in "
                f"{instance.region}, {_cost(price)}.\n{decision.reason}"
            ),
        ),
    )


def stop_failed_notice(instance: Instance, error: str, owner: str) -> Message:
    iid = instance.instance_id
    return Message(
        f"Could not stop idle {instance.instance_type} {iid}: {error}",
        (
            section(
                f":warning: costguard could not stop idle `{iid}`{_name(instance)} "
                f"({instance.instance_type}, owner {owner or 'unknown'}): `{error}`. "
                "It keeps running and costing; someone should look."
            ),
        ),
    )


def _subject(owner: str, instance: Instance) -> str:
    """Who and what the message is about: "alice, your `i-…` (name)" or "`i-…` (name), whose owner is unknown,"."""
    machine = f"`{instance.instance_id}`{_name(instance)}"
    return f"{owner}, your {machine}" if owner else f"{machine}, whose owner is unknown,"


def schedule_unreadable_notice(instance: Instance, reason: str, owner: str) -> Message:
    """The owner's working hours could not be read: the machine is kept (never stopped) until they can."""
    iid = instance.instance_id
    value = instance.tags.get(tags.SCHEDULE, "")
    text = f"costguard cannot read the working hours of {iid}{_name(instance)}: it keeps the machine until it can"
    return Message(
        text,
        (
            section(
                f"{_subject(owner, instance)} has `{tags.SCHEDULE}={value}`, which costguard cannot read: {reason}. "
                "It is never stopped while this lasts."
            ),
            context(
                "Write it as `<days> HH:MM-HH:MM <time zone>`, e.g. `weekdays 08:30-19:00 Europe/Berlin` or "
                "`daily 01:00-05:00 UTC`; several windows with `;`."
            ),
        ),
    )


def morning_start_note(instance: Instance, opens: datetime, owner: str) -> Message:
    """The owner's machine was started for their working hours (MorningNote)."""
    iid = instance.instance_id
    hours = instance.tags.get(tags.SCHEDULE, "")
    return Message(
        f"costguard started {iid}{_name(instance)} for your working hours, which open at {opens:%H:%M} UTC",
        (
            section(
                mrkdwn(
                    "Good morning: {0} is starting for its working hours (`{1}`), ", _subject(owner, instance), hours
                )
                + f"which open at {opens:%H:%M} UTC. It is never warned about or stopped inside them; outside "
                "them costguard stops it when it sits idle."
            ),
        ),
    )
