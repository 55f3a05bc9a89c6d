"""Scarce capacity, in the idle stopper's messages: a machine left running because it might not start
again, and a start EC2 refused. Pure."""

from __future__ import annotations

from datetime import datetime

from costguard.core.records import Instance
from costguard.slack.blocks import Message, Mrkdwn, actions, context, header, mrkdwn, section, when
from costguard.slack.buttons import start_buttons, stop_anyway_buttons


def _yours(who: Mrkdwn, instance: Instance) -> Mrkdwn:
    """ "<@U…>, your p4d.24xlarge `i-…`", or the machine alone where nobody can be named."""
    said = mrkdwn("{} `{}`", instance.instance_type, instance.instance_id)
    return mrkdwn("{}, your {}", who, said) if who else said


def scarce_idle_notice(instance: Instance, evidence: str, who: Mrkdwn, idle_for: str, hourly: float | None) -> Message:
    """Once a day, to the owner: an idle machine costguard does not stop in working hours, and why."""
    iid, kind = instance.instance_id, instance.instance_type
    cost = f"${hourly * 24:,.0f}/day · " if hourly else ""
    return Message(
        f"{kind} {iid} idles, but might not start again if stopped: costguard leaves it running in working hours",
        (
            header(f"Idle, and hard to get back: {cost}{kind}"),
            section(
                _yours(who, instance)
                + mrkdwn(
                    " has done no work for {}. {} lately, so costguard does not stop it while you work: a stopped "
                    "one might not start again.",
                    idle_for,
                    evidence[:1].upper() + evidence[1:],
                )
                + (Mrkdwn(f" It costs about ${hourly:,.2f} an idle hour.") if hourly else Mrkdwn(""))
            ),
            context("Outside working hours it is warned and stopped as usual. Said once a day."),
            actions(
                f"cg-scarce-{iid}"[:255],
                stop_anyway_buttons(
                    iid, instance.region, instance.account, risk="capacity is scarce, and it might not start again"
                ),
            ),
        ),
    )


def start_failed_notice(
    instance: Instance, due: datetime, why: str, until: datetime, who: Mrkdwn, *, zone: str = "UTC"
) -> Message:
    """At once, to the owner: costguard's start for their work was refused, and what it does next."""
    iid, kind = instance.instance_id, instance.instance_type
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
                + Mrkdwn(". Start it yourself below, or launch in another zone.")
            ),
            actions(f"cg-start-failed-{iid}"[:255], start_buttons(iid, instance.region, instance.account)),
        ),
    )
