"""A scarce machine worked only by night: its warning says the start before its night's run, made while its
owner is at work, and why (rules/capacity.py `for_its_night`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.core.records import Instance, Price
from costguard.core.settings import Mode
from costguard.idle.rules.decision import Action, Decision, StartFor
from costguard.idle.rules.judgement import Judgement, Verdict
from costguard.idle.words import messages as idle
from costguard.slack.blocks import mention
from testing.slack_text import as_read

NIGHT = datetime(2026, 11, 24, 4, 0, tzinfo=UTC)
P4D = Instance("i-00000000000000025", "us-east-1", "p4d.24xlarge", "running", NIGHT - timedelta(hours=4), tags={})


def test_the_warning_of_a_machine_worked_only_by_night_says_its_start_before_the_run_and_why() -> None:
    said = (
        "is put to work only by its runs (starts work at about 00:30 UTC (7 of the last 7 days)), none of it in its "
        "owner's hours on the last 9 weekdays, and might not start again at night (31 p4d.24xlarge starts failed "
        "for capacity in us-east-1a in the last two weeks)"
    )
    decision = Decision(
        P4D.instance_id,
        Action.WARN,
        "idle",
        stop_after=NIGHT + timedelta(minutes=30),
        judgement=Judgement(Verdict.IDLE, "GPU max 0% < 5%", idle_since=NIGHT - timedelta(hours=2)),
        next_work=said,
        start_at=NIGHT.replace(hour=17),
        start_for=StartFor.NIGHTS_RUN,
        run_at=datetime(2026, 11, 25, 0, 15, tzinfo=UTC),
    )
    part = idle.idle_warning(P4D, decision, Price(32.77, "pricing-api"), mention("U0ALICE"), NIGHT, mode=Mode.ENFORCE)
    assert as_read(part.promise) == (
        f"It {said}: costguard starts it again *Tue 24 Nov 17:00 UTC*, before its night's run, while its owner is "
        "at work."
    )
