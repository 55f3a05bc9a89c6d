"""Scarce capacity in the stopper's decisions and starts: pure rules, the evidence and `now` passed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.core import tags
from costguard.core.records import Instance
from costguard.core.scarcity import Scarcity
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.capacity import EARLIER, SCARCE, spared, tells_scarce, working_now
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.restarts import made_for, window_close, working_hours_start
from costguard.idle.rules.schedule import parse_schedule

POLICY = IdlePolicy()
TUESDAY_2PM = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)
OPENS = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
LEAD = timedelta(minutes=POLICY.schedule_lead_minutes)
EVIDENCE = Scarcity("p4d.24xlarge", "us-east-1a", 6, TUESDAY_2PM - timedelta(hours=3), TUESDAY_2PM - timedelta(days=2))


def p4d(
    state: str = "running", launched: datetime = OPENS - timedelta(days=1), tagged: dict[str, str] | None = None
) -> Instance:
    return Instance(
        "i-0123456789abcdef0", "us-east-1", "p4d.24xlarge", state, launched, tagged or {}, zone="us-east-1a"
    )


def warn() -> Decision:
    return Decision("i-0123456789abcdef0", Action.WARN, "idle for 2 h", stop_after=TUESDAY_2PM + timedelta(minutes=30))


def test_owners_work_weekdays_eight_to_seven_in_the_teams_zone_unless_the_machine_keeps_hours_of_its_own() -> None:
    assert working_now(p4d(), TUESDAY_2PM, "UTC")
    assert not working_now(p4d(), TUESDAY_2PM.replace(hour=19, minute=30), "UTC")
    assert not working_now(p4d(), TUESDAY_2PM, "Asia/Tokyo")  # 23:00 in Tokyo
    assert not working_now(p4d(), datetime(2026, 11, 28, 14, 0, tzinfo=UTC), "UTC")  # a Saturday
    own = p4d(tagged={tags.SCHEDULE: "daily 01:00-05:00 UTC"})
    assert not working_now(own, TUESDAY_2PM, "UTC")  # its own hours are what count
    assert working_now(own, TUESDAY_2PM.replace(hour=2), "UTC")
    assert working_now(p4d(tagged={tags.SCHEDULE: "whenever"}), TUESDAY_2PM, "Nowhere/Else")  # unreadable: the team's


def test_a_scarce_machine_is_neither_warned_nor_stopped_while_its_owner_works_and_is_told_why() -> None:
    decided = spared(warn(), EVIDENCE, working=True, now=TUESDAY_2PM)
    assert decided.action is Action.NONE
    assert decided.reason.startswith(SCARCE)
    assert decided.scarce == "6 p4d.24xlarge starts failed for capacity in us-east-1a this week"
    assert tells_scarce(decided)
    stop = spared(Decision("i-1", Action.STOP, "idle through grace"), EVIDENCE, working=True, now=TUESDAY_2PM)
    assert stop.action is Action.CLEAR_WARNING  # warned before the evidence: the warning goes
    assert tells_scarce(stop)


def test_outside_working_hours_or_without_evidence_a_scarce_rule_changes_nothing() -> None:
    assert spared(warn(), EVIDENCE, working=False, now=TUESDAY_2PM) == warn()
    assert spared(warn(), None, working=True, now=TUESDAY_2PM) == warn()
    unseen = Decision("i-1", Action.WARN, "no GPU metrics", will_stop=False)  # stops nothing by itself
    assert spared(unseen, EVIDENCE, working=True, now=TUESDAY_2PM) == unseen
    assert not tells_scarce(warn())


def test_a_scarce_machines_working_hours_start_is_made_sooner() -> None:
    machine = p4d("stopped", tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    early = OPENS - LEAD - timedelta(minutes=30)
    assert working_hours_start(machine, early, POLICY) is None
    assert working_hours_start(machine, early, POLICY, sooner=EARLIER) == OPENS


def test_a_refused_working_hours_start_is_tried_again_while_the_window_is_open_and_nobody_started_it() -> None:
    machine = p4d("stopped", tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    refused = OPENS - timedelta(minutes=10)
    assert working_hours_start(machine, OPENS + timedelta(hours=2), POLICY, failed_at=refused) == OPENS
    assert working_hours_start(machine, OPENS + timedelta(hours=2), POLICY) is None  # never refused: not made late
    stale = OPENS - timedelta(days=1)  # a refusal of yesterday's window
    assert working_hours_start(machine, OPENS + timedelta(hours=2), POLICY, failed_at=stale) is None
    assert working_hours_start(machine, OPENS + timedelta(hours=9), POLICY, failed_at=refused) is None  # closed
    started = p4d("stopped", OPENS + timedelta(minutes=30), tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    assert working_hours_start(started, OPENS + timedelta(hours=2), POLICY, failed_at=refused) is None


def test_a_window_closes_at_its_end_and_an_unread_schedule_eight_hours_on() -> None:
    assert window_close(p4d(tagged={tags.SCHEDULE: "weekdays 09:00-17:00 UTC"}), OPENS) == OPENS + timedelta(hours=8)
    assert window_close(p4d(tagged={tags.SCHEDULE: "daily 22:00-06:00 UTC"}), OPENS.replace(hour=22)) == OPENS.replace(
        hour=22
    ) + timedelta(hours=8)
    assert window_close(p4d(), OPENS) == OPENS + timedelta(hours=8)
    assert parse_schedule("mon-fri 09:00-12:00 UTC; tue 09:00-18:00 UTC").closes(OPENS) == OPENS.replace(hour=18)
    assert parse_schedule("daily 09:00-17:00 UTC").opened(OPENS + timedelta(hours=8)) is None


def test_a_learned_start_made_sooner_for_scarce_capacity_is_still_the_learned_start() -> None:
    start_at = OPENS
    stopped = OPENS - timedelta(hours=10)
    early = p4d("running", start_at - EARLIER + timedelta(minutes=1), tagged={tags.STOPPED_AT: stopped.isoformat()})
    assert made_for(early, start_at, POLICY)
    too_early = p4d("running", start_at - EARLIER - timedelta(minutes=5), tagged={tags.STOPPED_AT: stopped.isoformat()})
    assert not made_for(too_early, start_at, POLICY)
