"""Where a person would otherwise exempt or keep a machine after a stop of automated work, costguard offers
"Keep it for its runs": on the warning of a machine whose runs it knows (in place of "Keep until Monday", so the
buttons stay as few), and on the stop of one it promised to start before its run. A machine kept for its runs is
offered neither it nor "Skip the planned start"; one whose runs costguard does not know is told so."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core import tags
from costguard.core.records import Instance, Price
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.judgement import Judgement, Verdict
from costguard.idle.words import messages as idle
from costguard.idle.words.grouping import Part, gather
from costguard.slack import live
from costguard.slack.blocks import mention
from costguard.slack.buttons import MENU_OPTIONS, Button
from testing.slack_text import as_read

NOW = datetime(2026, 11, 20, 14, 0, tzinfo=UTC)
PRICE = Price(5.672, "pricing-api")
ALICE = mention("U0ALICE")
RUNS = "runs `nightly.sh` at 02:00 UTC (its crontab)"
START_AT = datetime(2026, 11, 21, 1, 45, tzinfo=UTC)


def machine(tagged: dict[str, str] | None = None) -> Instance:
    return Instance(
        "i-00000000000000001", "us-east-1", "g5.12xlarge", "running", NOW - timedelta(hours=6), tags=tagged or {}
    )


def decided(action: Action, *, runs: str = "", start_at: datetime | None = None) -> Decision:
    judgement = Judgement(Verdict.IDLE, "GPU max 1% < 5%", idle_since=NOW - timedelta(hours=3))
    return Decision(
        "i-1",
        action,
        "idle",
        stop_after=NOW + timedelta(minutes=30),
        judgement=judgement,
        next_work=runs if start_at else "",
        start_at=start_at,
        runs=runs,
    )


def ids(part: live.Part) -> list[str]:
    return [str(b["action_id"]) for b in part.buttons]


def test_the_warning_of_a_machine_with_known_runs_offers_keep_it_for_its_runs_in_place_of_monday() -> None:
    part = idle.idle_warning(machine(), decided(Action.WARN, runs=RUNS, start_at=START_AT), PRICE, ALICE, NOW)
    assert ids(part) == [
        Button.KEEP_2H,
        Button.KEEP_TOMORROW,
        Button.KEEP_FOR_RUNS,
        Button.KEEP_WHILE_BUSY,
        Button.STOP_NOW,
        Button.STOP_NO_START,
        Button.DONT_START,
        Button.WHY,
    ]
    assert part.buttons[2]["text"]["text"] == "Keep it for its runs"
    # Among several machines, every choice, its stops too, fits the menu.
    parts = [
        Part(live.Live((p,)).message(), f"cg-warn-{k}", "warn", p, ALICE)
        for k, p in enumerate([part, replace(part, key="i-2")])
    ]
    [gathered] = gather(parts)
    menu = gathered.message.blocks[2]["accessory"]
    chosen = [json.loads(o["value"])["b"] for o in menu["options"]]
    assert len(chosen) == MENU_OPTIONS
    assert Button.KEEP_FOR_RUNS in chosen
    assert Button.DONT_START in chosen


def test_a_warning_of_a_machine_whose_runs_are_unknown_keeps_its_buttons_as_they_were() -> None:
    part = idle.idle_warning(machine(), decided(Action.WARN), PRICE, ALICE, NOW)
    assert ids(part) == [
        Button.KEEP_2H,
        Button.KEEP_TOMORROW,
        Button.KEEP_MONDAY,
        Button.KEEP_WHILE_BUSY,
        Button.STOP_NOW,
        Button.WHY,
    ]


def test_a_machine_already_kept_for_its_runs_is_offered_neither_that_keep_nor_skipping_its_start() -> None:
    kept = machine({tags.KEEP_FOR_RUNS: "on"})
    part = idle.idle_warning(kept, decided(Action.WARN, runs=RUNS, start_at=START_AT), PRICE, ALICE, NOW)
    assert Button.KEEP_FOR_RUNS not in ids(part)
    assert Button.DONT_START not in ids(part)
    assert Button.KEEP_MONDAY in ids(part)
    assert "kept for its runs" not in part.status  # its runs are known: nothing to warn of
    stopped = idle.stopped_part(kept, decided(Action.STOP, runs=RUNS, start_at=START_AT), PRICE, ALICE, NOW, zone="UTC")
    assert ids(stopped) == [Button.START, Button.WHY]


def test_the_stop_of_a_machine_promised_a_start_before_its_run_offers_keep_it_for_its_runs() -> None:
    stop = decided(Action.STOP, runs=RUNS, start_at=START_AT)
    part = idle.stopped_part(machine(), stop, PRICE, ALICE, NOW, zone="UTC")
    assert ids(part) == [Button.START, Button.DONT_START, Button.KEEP_FOR_RUNS, Button.WHY]
    assert "costguard starts it again" in as_read(part.status)
    # A stop that promised no start (the run unknown, or starts off for it) offers only to start it again.
    plain = idle.stopped_part(machine(), decided(Action.STOP, runs=RUNS), PRICE, ALICE, NOW, zone="UTC")
    assert ids(plain) == [Button.START, Button.WHY]


def test_a_machine_kept_for_its_runs_none_of_which_costguard_knows_is_warned_that_nothing_holds_its_stop() -> None:
    kept = machine({tags.KEEP_FOR_RUNS: "on"})
    part = idle.idle_warning(kept, decided(Action.WARN), PRICE, ALICE, NOW)
    said = as_read(part.status)
    assert "costguard stops it" in said
    assert (
        "It is kept for its runs (`costguard:keep-for-runs`), but costguard knows none: no scheduled job on it, "
        "no recurring work learned, so nothing holds the stop."
    ) in said
    untagged = idle.idle_warning(machine(), decided(Action.WARN), PRICE, ALICE, NOW)
    assert "kept for its runs" not in untagged.status


def test_the_warnings_context_line_names_the_keep_for_runs_tag_beside_the_others_alone_and_gathered() -> None:
    """A person who reads the tags a warning offers learns the one that keeps their runs too (the tag the
    "Keep it for its runs" button writes), not only the two that keep the machine running."""
    one = idle.idle_warning(machine(), decided(Action.WARN), PRICE, ALICE, NOW)
    alone = as_read(live.Live((one,)).message().blocks)
    parts = [
        Part(live.Live((p,)).message(), f"cg-warn-{k}", "warn", p, ALICE)
        for k, p in enumerate([one, replace(one, key="i-2")])
    ]
    [gathered] = gather(parts)
    for said in (alone, as_read(gathered.message.blocks)):
        assert f"`{tags.KEEP_UNTIL}`" in said
        assert f"`{tags.EXEMPT}`" in said
        assert f"`{tags.KEEP_FOR_RUNS}=on`" in said
