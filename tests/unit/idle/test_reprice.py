"""Step 15: the machines costguard keeps stopped, priced again for the digest; never at the sweep's cost."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.acts.worth import reprice_stopped
from costguard.idle.rules.restarts import costguards_stop
from costguard.state.worth import Worth

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)


def stopped(iid: str, *, stopped_at: datetime | None, launched: datetime) -> Instance:
    kept = {tags.STOPPED_AT: formatting.format_time(stopped_at)} if stopped_at else {}
    return Instance(iid, "us-east-1", "p4d.24xlarge", "stopped", launched, tags=kept)


OURS = stopped("i-ours", stopped_at=NOW - timedelta(hours=3), launched=NOW - timedelta(hours=9))
# costguard stopped it once; its owner started it since and stopped it by hand: the stop is not costguard's
THEIRS = stopped("i-theirs", stopped_at=NOW - timedelta(days=2), launched=NOW - timedelta(hours=5))


def test_only_a_machine_whose_last_stop_costguard_made_is_costguards() -> None:
    assert costguards_stop(OURS) == NOW - timedelta(hours=3)
    assert costguards_stop(THEIRS) is None
    assert costguards_stop(stopped("i-none", stopped_at=None, launched=NOW)) is None


class Fleet:
    region = "us-east-1"

    def iter_instances(self, filters: Sequence[Any] = ()) -> Iterator[Instance]:
        yield from (OURS, THEIRS)


class Log:
    def __init__(self) -> None:
        self.kept: list[Worth] = []

    def record(self, worth: Worth) -> None:
        self.kept.append(worth)


class Bill:
    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.asked: list[str] = []
        self.learned = False
        self.learned_with: list[str] = []
        self.profile = object()
        self.region = "us-east-1"

    def worth(self, machines: Sequence[Instance]) -> dict[str, float]:
        self.asked = [i.instance_id for i in machines]
        if self.fails:
            raise ValueError("a price costguard could not read")
        return {i.instance_id: 21.96 for i in machines}

    def spill_found(self, stopped: Sequence[Instance] = ()) -> dict[str, float]:
        self.learned = True
        self.learned_with = [i.instance_id for i in stopped]
        return {}


def test_the_sweep_prices_only_the_machines_costguard_keeps_stopped() -> None:
    log, bill = Log(), Bill()
    reprice_stopped(Fleet(), IdlePolicy(), log, bill, NOW)  # type: ignore[arg-type]
    assert bill.asked == ["i-ours"]
    assert log.kept == [Worth(NOW, "us-east-1", {"i-ours": 21.96})]


def test_a_failure_of_any_kind_is_logged_and_never_fails_the_sweep() -> None:
    log = Log()
    bill = Bill(fails=True)
    reprice_stopped(Fleet(), IdlePolicy(), log, bill, NOW)  # type: ignore[arg-type]
    assert log.kept == []
    assert bill.learned  # the spill the sweep's bill found is kept all the same


def test_the_spill_is_learned_as_if_the_machines_costguard_keeps_stopped_ran() -> None:
    bill = Bill()
    reprice_stopped(Fleet(), IdlePolicy(), Log(), bill, NOW)  # type: ignore[arg-type]
    assert bill.learned_with == ["i-ours"]


class Unread:
    region = "us-east-1"

    def iter_instances(self, filters: Sequence[Any] = ()) -> Iterator[Instance]:
        raise RuntimeError("RequestLimitExceeded")


def test_no_spill_is_learned_when_the_stopped_machines_could_not_be_read() -> None:
    # Learned without them, the spill would be net of their stops, and each would take its share twice.
    bill = Bill()
    reprice_stopped(Unread(), IdlePolicy(), Log(), bill, NOW)  # type: ignore[arg-type]
    assert not bill.learned
