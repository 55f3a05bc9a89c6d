"""Once a day, about a machine costguard leaves running though it idles: on prepaid capacity (a stop saves
nothing), or of a type that might not start again (told to its owner while they work)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from costguard.core.formatting import duration
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.idle.acts.owners import OwnerMessages, owner_once
from costguard.idle.rules.capacity import held_for_run
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.words.capacity import scarce_idle_notice
from costguard.idle.words.money import prepaid_idle_notice


def tell_prepaid(
    notices: OwnerMessages, instance: Instance, decision: Decision, now: datetime, *, clear: Callable[[], None]
) -> None:
    """Once a day, to the alerts channel and (but in dry-run) to the owner: the machine idles on prepaid
    capacity, left running, with a button to stop it anyway. A warning given before the bill was read goes."""
    if decision.action is Action.CLEAR_WARNING:
        clear()
    owner = instance.owner(notices.settings.owner_tag_key)
    if decision.bill is None:
        return
    idle = duration(decision.judgement.idle_minutes(now)) if decision.judgement is not None else "a while"
    message = prepaid_idle_notice(
        instance, decision.bill, notices.person(owner), idle, account=instance.account, zone=notices.zone
    )
    day = f"{instance.instance_id}:{now:%Y-%m-%d}"
    notices.report_once(f"prepaid:{day}", message, now)
    if owner:
        owner_once(notices, f"prepaid-owner:{day}", owner, message, now)


def tell_scarce(
    notices: OwnerMessages, instance: Instance, decision: Decision, now: datetime, *, clear: Callable[[], None]
) -> None:
    """Once a day, to the owner (in dry-run, the alerts channel): the machine idles, and is left running while
    its owner works because it might not start again; a warning given before goes."""
    if decision.action is Action.CLEAR_WARNING:
        clear()
    owner = instance.owner(notices.settings.owner_tag_key)
    idle = duration(decision.judgement.idle_minutes(now)) if decision.judgement is not None else "a while"
    hourly = notices.prices.hourly(instance.instance_type, instance.region).usd_per_hour
    run = held_for_run(decision)
    message = scarce_idle_notice(instance, decision.scarce, notices.person(owner), idle, hourly, run=run, now=now)
    day = f"{instance.instance_id}:{now:%Y-%m-%d}"
    if notices.mode is Mode.DRY_RUN:
        notices.report_once(f"scarce:{day}", message, now)
    owner_once(notices, f"scarce-owner:{day}", owner, message, now)  # no owner: the alerts channel
