"""The idle stopper follows the money: a stop that saves nothing on the bill is not made."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.core.money import Basis, Hold, Marginal
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.money import priced, tells_prepaid

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)
BLOCK = Hold("cr-block", "p5.48xlarge", "us-east-1a", 2, 0, NOW + timedelta(days=2), block=True)
PREPAID = Marginal(0.0, 55.04, Basis.CAPACITY_BLOCK, "in Capacity Block cr-block: prepaid", hold=BLOCK)
COVERED = Marginal(0.0, 21.96, Basis.RESERVED, "covered: 3 p4d run, 3 Reserved Instances")
ON_DEMAND = Marginal(21.96, 21.96, Basis.ON_DEMAND, "on demand: 5 p4d run, 3 Reserved Instances")


def warn() -> Decision:
    return Decision("i-1", Action.WARN, "idle for 2 h", stop_after=NOW + timedelta(minutes=30))


def test_a_warning_whose_stop_saves_on_the_bill_carries_the_saving() -> None:
    decided = priced(warn(), ON_DEMAND)
    assert (decided.action, decided.bill) == (Action.WARN, ON_DEMAND)


def test_a_machine_on_prepaid_capacity_is_neither_warned_nor_stopped_and_is_told_once_a_day() -> None:
    decided = priced(warn(), PREPAID)
    assert decided.action is Action.NONE
    assert decided.reason == (
        "not stopped for money: a stop saves nothing on the bill now (in Capacity Block cr-block: prepaid)"
    )
    assert tells_prepaid(decided)
    stop = priced(Decision("i-1", Action.STOP, "idle through the grace period"), PREPAID)
    assert stop.action is Action.CLEAR_WARNING  # warned before the bill was read: the warning goes
    assert tells_prepaid(stop)


def test_a_machine_covered_by_reserved_instances_is_not_stopped_and_not_told_as_prepaid() -> None:
    decided = priced(warn(), COVERED)
    assert decided.action is Action.NONE
    assert not tells_prepaid(decided)


def test_a_decision_other_than_warn_or_stop_is_not_priced() -> None:
    keep = Decision("i-1", Action.SKIP, "exempt: demo")
    assert priced(keep, PREPAID) is keep
