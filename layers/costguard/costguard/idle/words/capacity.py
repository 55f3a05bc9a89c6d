"""Scarce capacity, in the idle stopper's messages: a machine left running because it might not start
again, and a start EC2 refused. Pure."""

from __future__ import annotations

from datetime import datetime

from costguard.core.records import Instance
from costguard.slack.blocks import Message, actions, context, header, mrkdwn, section
from costguard.slack.buttons import start_buttons, stop_anyway_buttons


def scarce_idle_notice(instance: Instance, evidence: str, owner: str, idle_for: str, hourly: float | None) -> Message:
    """Once a day, to the owner: an idle machine costguard does not stop in working hours, and why."""
    iid, kind = instance.instance_id, instance.instance_type
    who = f"{owner}, your" if owner else "An unowned"
    cost = f" It costs about ${hourly:,.2f} an idle hour." if hourly else ""
    return Message(
        f"{kind} {iid} idles, but might not start again if stopped: costguard leaves it running in working hours",
        (
            header(f"Idle, and hard to get back: {kind}"),
            section(
                mrkdwn(
                    "{} `{}` ({}) has done no work for {}. {} lately, so costguard does not stop it while you work: "
                    "a stopped one might not start again.{} Outside working hours it is warned and stopped as usual.",
                    who,
                    iid,
                    kind,
                    idle_for,
                    evidence[:1].upper() + evidence[1:],
                    cost,
                )
            ),
            context("Stop it anyway if nobody needs it today; costguard says this once a day."),
            actions(
                f"cg-scarce-{iid}"[:255],
                stop_anyway_buttons(
                    iid, instance.region, instance.account, risk="capacity is scarce, and it might not start again"
                ),
            ),
        ),
    )


def start_failed_notice(instance: Instance, due: datetime, why: str, until: datetime, owner: str) -> Message:
    """At once, to the owner: costguard's start for their work was refused, and what it does next."""
    iid, kind = instance.instance_id, instance.instance_type
    who = f"{owner}, your" if owner else "The unowned"
    return Message(
        f"costguard could not start {kind} {iid} for {due:%H:%M} UTC: {why}",
        (
            header(f"Start refused: {kind}"),
            section(
                mrkdwn(
                    "{} `{}` ({}) was to be running by {} UTC, but EC2 has no capacity for it ({}). costguard tries "
                    "again every sweep until {} UTC. Start it yourself below, or launch in another zone.",
                    who,
                    iid,
                    kind,
                    f"{due:%H:%M}",
                    why,
                    f"{until:%a %H:%M}",
                )
            ),
            actions(f"cg-start-failed-{iid}"[:255], start_buttons(iid, instance.region, instance.account)),
        ),
    )
