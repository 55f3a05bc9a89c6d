"""A warning or a stop, as the bill sees it. Pure.

A stop is made to save money: one that saves nothing on the bill now (the machine runs in a Capacity
Block or a capacity reservation, or on Reserved Instances or a Savings Plan with room to spare) is not
made, nor warned of. A machine that idles on prepaid capacity is said once a day instead, to its owner
and the alerts channel, with a button for a person who wants the slot freed.
"""

from __future__ import annotations

from dataclasses import replace

from costguard.core.money import Marginal
from costguard.idle.rules.decision import Action, Decision, KeptFor

PRICED = (Action.WARN, Action.STOP)
NOT_FOR_MONEY = "not stopped for money: a stop saves nothing on the bill now"


def priced(decision: Decision, marginal: Marginal) -> Decision:
    """The decision with what its stop would save; a warning or stop that saves nothing becomes none (a stop
    already warned of clears its warning)."""
    if decision.action not in PRICED:
        return decision
    if marginal.saves:
        return replace(decision, bill=marginal)
    action = Action.CLEAR_WARNING if decision.action is Action.STOP else Action.NONE
    return replace(
        decision,
        action=action,
        reason=f"{NOT_FOR_MONEY} ({marginal.why})",
        bill=marginal,
        will_stop=False,
        stop_after=None,
        kept_for=KeptFor.NOTHING_SAVED,
        scarce="",  # left running for the bill, not for capacity: no daily tell of scarcity
    )


def tells_prepaid(decision: Decision) -> bool:
    """An idle machine left running because its capacity is paid whether it runs or not: said once a day."""
    return (
        decision.bill is not None
        and decision.bill.prepaid
        and decision.kept_for is KeptFor.NOTHING_SAVED
        and decision.action in (Action.NONE, Action.CLEAR_WARNING)
    )
