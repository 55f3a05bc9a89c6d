"""What the owner of a scarce machine reads: why it is left running, with the evidence and a way to stop it;
and a refused start, at once, with what costguard does next and a way to start it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core import tags
from costguard.core.records import Instance
from costguard.idle.words.capacity import scarce_idle_notice, start_failed_notice
from costguard.slack.blocks import mention
from costguard.slack.buttons import Button
from testing.slack_text import as_read, dates_in

NOW = datetime(2026, 11, 24, 8, 50, tzinfo=UTC)
P4D = Instance("i-1", "us-east-1", "p4d.24xlarge", "running", NOW - timedelta(days=1), zone="us-east-1a")


def test_a_scarce_machine_left_running_says_why_with_the_evidence_and_offers_a_stop_that_names_the_risk() -> None:
    evidence = "6 p4d.24xlarge starts failed for capacity in us-east-1a this week"
    message = scarce_idle_notice(P4D, evidence, mention("U0ANA"), "3 h", 21.96, now=NOW)
    text = json.dumps(message.blocks)
    assert "<@U0ANA>, your p4d.24xlarge `i-1` has done no work for 3 h" in text
    assert message.blocks[0]["text"]["text"] == "Idle, and hard to get back: $527/day · p4d.24xlarge"  # cost first
    assert "6 p4d.24xlarge starts failed for capacity in us-east-1a this week" in text
    assert "$21.96 an idle hour" in text
    assert "capacity is scarce, and it might not start again" in text  # the Stop anyway button's confirmation
    assert "stop_now" in text.lower() or "stop-now" in text.lower()


def test_a_scarce_machine_left_running_for_its_nightly_run_says_which_run_in_the_readers_time() -> None:
    evidence = "6 p4d.24xlarge starts failed for capacity in us-east-1a this week"
    evening = NOW.replace(hour=20)
    run = "runs `etl.sh` at 05:00 UTC (its crontab)"
    message = scarce_idle_notice(P4D, evidence, mention("U0ANA"), "3 h", 21.96, run=run, now=evening)
    text = as_read(message.blocks)
    assert "leaves it running for its run before you are back (it runs `etl.sh` at 05:00 UTC (its crontab))" in text
    assert "nobody would be there to start it again" in text
    assert dates_in(message.blocks) == [int(datetime(2026, 11, 25, 5, 0, tzinfo=UTC).timestamp())]
    assert "leaves it running for its next run" in message.text
    assert "Stopped as usual when no run is due before your day" in text


def test_a_refused_start_says_what_costguard_does_next_and_offers_a_start() -> None:
    until = NOW.replace(hour=17, minute=0)
    message = start_failed_notice(P4D, NOW, "InsufficientInstanceCapacity in us-east-1a", until, mention("U0ANA"))
    text = as_read(message.blocks)
    assert "running by Tue 24 Nov 08:50 UTC" in text
    assert "tries again every sweep until Tue 24 Nov 17:00 UTC" in text
    assert "Start it again" in text
    assert dates_in(message.blocks) == [int(NOW.timestamp()), int(until.timestamp())]  # each reader's own time
    assert as_read(message.text) == (
        "costguard could not start p4d.24xlarge i-1 for Tue 24 Nov 08:50 UTC: "
        "InsufficientInstanceCapacity in us-east-1a"
    )


def test_a_refused_learned_start_offers_to_skip_it_and_a_refused_working_hours_start_does_not() -> None:
    """Its owner may not want the retries for a run (the run moved, or they will do without): "Skip the planned
    start" stops them. A working-hours start is not a planned start that button turns off: not offered."""
    until = NOW.replace(hour=17, minute=0)
    why = "InsufficientInstanceCapacity in us-east-1a"
    learned = replace(P4D, state="stopped", tags={tags.START_AT: "2026-11-24T08:50:00Z"})
    buttons = json.dumps(start_failed_notice(learned, NOW, why, until, mention("U0ANA")).blocks)
    assert "Skip the planned start" in buttons
    assert Button.DONT_START.value in buttons
    hours = json.dumps(start_failed_notice(replace(P4D, state="stopped"), NOW, why, until, mention("U0ANA")).blocks)
    assert "Skip the planned start" not in hours
