"""Scarce capacity, in the idle stopper's messages: a machine left running because it might not start
again, and a start EC2 refused. Pure."""

from __future__ import annotations

from datetime import datetime

from costguard.core import tags
from costguard.core.records import Instance
from costguard.slack.blocks import Message, Mrkdwn, actions, context, header, mrkdwn, section, times_in, when
from costguard.slack.buttons import start_buttons, stop_anyway_buttons


def _yours(who: Mrkdwn, instance: Instance) -> Mrkdwn:
    """ "<@U…>, your p4d.24xlarge `i-…`", or the machine alone where nobody can be named."""
    said = mrkdwn("{} `{}`", instance.instance_type, instance.instance_id)
    return mrkdwn("{}, your {}", who, said) if who else said


def scarce_idle_notice(
    instance: Instance,
    evidence: str,
    who: Mrkdwn,
    idle_for: str,
    hourly: float | None,
    *,
    run: str = "",
    start_at: str = "",
    now: datetime,
) -> Message:
    """Once a day, to the owner: an idle machine costguard does not stop in working hours, or before its
    automated `run` (as the rules say it, after "it": "runs `etl.sh` at 05:00 UTC (its crontab)"), and why; its
    times in each reader's own (the nearest to `now`). `start_at`: the start promised for that run, which Stop
    anyway keeps."""
    iid, kind = instance.instance_id, instance.instance_type
    cost = f"${hourly * 24:,.0f}/day · " if hourly else ""
    where = "for its next run" if run else "in working hours"
    because = (
        Mrkdwn(" so costguard leaves it running for its run before you are back (it ")
        + times_in(run, now)
        + Mrkdwn("): if EC2 refused its start in the night, nobody would be there to start it again.")
        if run
        else Mrkdwn(" so costguard does not stop it while you work: a stopped one might not start again.")
    )
    return Message(
        f"{kind} {iid} idles, but might not start again if stopped: costguard leaves it running {where}",
        (
            header(f"Idle, and hard to get back: {cost}{kind}"),
            section(
                _yours(who, instance)
                + mrkdwn(" has done no work for {}. {} lately,", idle_for, evidence[:1].upper() + evidence[1:])
                + because
                + (Mrkdwn(f" It costs about ${hourly:,.2f} an idle hour.") if hourly else Mrkdwn(""))
            ),
            context(
                "Stopped as usual when no run is due before your day. Said once a day."
                if run
                else "Outside working hours it is warned and stopped as usual. Said once a day."
            ),
            actions(
                f"cg-scarce-{iid}"[:255],
                stop_anyway_buttons(
                    iid,
                    instance.region,
                    instance.account,
                    risk="capacity is scarce, and it might not start again",
                    start_at=start_at if run else "",
                ),
            ),
        ),
    )


def start_failed_notice(
    instance: Instance, due: datetime, why: str, until: datetime, who: Mrkdwn, *, zone: str = "UTC"
) -> Message:
    """At once, to the owner: costguard's start for their work was refused, and what it does next. A start it
    planned for a run (its `costguard:start-at`) can be skipped from here; a working-hours start cannot."""
    iid, kind = instance.instance_id, instance.instance_type
    planned = tags.START_AT in instance.tags
    return Message(
        mrkdwn("costguard could not start {} {} for ", kind, iid) + when(due, zone) + mrkdwn(": {}", why),
        (
            header(f"Start refused: {kind}"),
            section(
                _yours(who, instance)
                + Mrkdwn(" was to be running by ")
                + when(due, zone)
                + mrkdwn(", but EC2 has no capacity for it ({}). costguard tries again every sweep until ", why)
                + when(until, zone)
                + Mrkdwn(
                    ". Start it yourself below, launch in another zone, or skip this planned start."
                    if planned
                    else ". Start it yourself below, or launch in another zone."
                )
            ),
            actions(
                f"cg-start-failed-{iid}"[:255],
                start_buttons(iid, instance.region, instance.account, learned_start=planned),
            ),
        ),
    )
