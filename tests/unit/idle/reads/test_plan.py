"""The sweep's reading of a machine's check answers for its first verdict: which CPU points no answer can speak for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.core.settings import IdlePolicy
from costguard.idle.reads.plan import answered, awaiting, unattributed
from costguard.idle.rules.evidence import Answer

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)
POLICY = IdlePolicy()
PERIOD = timedelta(seconds=POLICY.period_seconds)


def test_the_last_answer_is_awaited_on_only_when_recent_and_it_saw_nothing_at_work() -> None:
    quiet = Answer(at=NOW - timedelta(minutes=15), input_idle_s=5 * 3600)
    assert answered([Answer(at=NOW - timedelta(minutes=30)), quiet], NOW, POLICY) == quiet.at
    assert answered([], NOW, POLICY) is None
    assert answered([Answer(at=NOW - timedelta(minutes=21))], NOW, POLICY) is None  # not the last sweep's
    assert answered([Answer(at=quiet.at, input_idle_s=600)], NOW, POLICY) is None  # someone typed 10 minutes before
    assert answered([Answer(at=quiet.at, top_cpu=90.0)], NOW, POLICY) is None  # a process busy on a core
    assert answered([Answer(at=quiet.at, blind=True)], NOW, POLICY) is None  # it could not look at everything
    assert answered([Answer(at=quiet.at, hook=True)], NOW, POLICY) is None  # its owner's hook said keep
    assert answered([Answer(at=quiet.at, kernels=1)], NOW, POLICY) is None  # a notebook's kernel alive
    assert answered([Answer(at=quiet.at, gpu_holders=1)], NOW, POLICY) is None  # a job's process holds GPU memory


def test_the_points_awaited_are_those_whose_period_ends_after_the_last_answer() -> None:
    last = NOW - timedelta(minutes=15)
    pending = awaiting(lambda _: False, last, POLICY)
    assert not pending(last - PERIOD)  # its period ends at the answer: the answers speak for it
    assert pending(last - PERIOD + timedelta(seconds=1))
    assert pending(last + PERIOD)
    assert awaiting(lambda _: True, last, POLICY)(last - 2 * PERIOD)  # the system's already


def test_bursts_before_the_first_answer_kept_stay_the_systems_and_none_after_it() -> None:
    first = NOW - timedelta(minutes=30)
    bursts = frozenset({first - 2 * PERIOD, first - PERIOD, first, first + PERIOD})
    assert unattributed(bursts, [Answer(at=first), Answer(at=NOW)], POLICY) == {first - 2 * PERIOD, first - PERIOD}
    assert unattributed(bursts, [], POLICY) == bursts  # no answer kept: all of them
