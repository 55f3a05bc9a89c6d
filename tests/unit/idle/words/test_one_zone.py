"""One zone a sentence, the reader's: where Slack cannot show a reader their own time (a notification, an old
client), every fallback of a sentence names the one zone the message is written for, never UTC beside CET."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

from costguard.core.bill import OffWorth
from costguard.core.money import Basis, Marginal
from costguard.idle.rules.decision import Action
from costguard.idle.words import messages as idle
from costguard.slack.blocks import times_in
from testing.slack_text import as_read, plain_times
from tests.unit.idle.words.test_keep_for_runs import ALICE, NOW, PRICE, START_AT, decided, machine

LEARNED = "starts work at about 02:00 UTC (5 of the last 7 days)"


def zones_in(text: str) -> set[str]:
    return set(re.findall(r"\d{2}:\d{2} ([A-Z]{3,4})\b", text))


def test_a_stop_notice_says_the_learned_work_and_costguard_s_start_in_the_team_s_one_zone() -> None:
    stop = decided(Action.STOP, runs=LEARNED, start_at=START_AT)
    part = idle.stopped_part(machine(), stop, PRICE, ALICE, NOW, zone="Europe/Paris")
    said = as_read(part.status)
    assert "starts work at about 03:00 CET (5 of the last 7 days): " in said
    assert "costguard starts it again *Sat 21 Nov 02:45 CET*" in said
    assert zones_in(said) == {"CET"}


def test_a_rule_s_times_keep_their_own_zone_where_no_reader_s_is_given() -> None:
    at = datetime(2026, 11, 20, 13, 0, tzinfo=UTC)
    assert as_read(times_in("last at 12:50 UTC", at)) == "last at 12:50 UTC"
    assert as_read(times_in("last at 12:50 UTC", at, reader="Europe/Paris")) == "last at 13:50 CET"


def test_a_stop_priced_over_its_hours_off_says_until_when_as_each_reader_s_time() -> None:
    # Priced on the bill's profile: it saves until Monday 09:00 UTC, the Savings Plan spilling from 08:00 UTC.
    monday = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    worth = OffWorth(130.0, monday, spills_from=monday.replace(hour=8), what="the Savings Plan")
    bill = Marginal(0.0, 5.672, Basis.SAVINGS_PLAN, "covered by the Savings Plan")
    for action in (Action.WARN, Action.STOP):
        chosen = replace(decided(action), bill=bill, worth=worth)
        part = (
            idle.idle_warning(machine(), chosen, PRICE, ALICE, NOW, zone="Europe/Paris")
            if action is Action.WARN
            else idle.stopped_part(machine(), chosen, PRICE, ALICE, NOW, zone="Europe/Paris")
        )
        said = {"text": f"{part.detail} {part.status}"}
        assert "Saves about $130" in said["text"]
        assert not plain_times(said), plain_times(said)
        assert "<!date^1795424400^" in said["text"]  # Monday 09:00 UTC, shown in each reader's own zone
