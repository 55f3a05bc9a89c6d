"""A live message: its header says what is true of its parts now, cost first; each status is one sentence in
one voice with Slack's own dates; buttons that no longer mean anything are gone; what is kept reads back as it
was drawn."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from costguard.slack import live
from costguard.slack.blocks import Mrkdwn, mention
from costguard.slack.buttons import Button, as_menu, start_buttons, warning_buttons
from costguard.slack.live import Live, Part, Phase
from testing.slack_text import as_read, dates_in

NOW = datetime(2026, 11, 21, 14, 0, tzinfo=UTC)
ALICE = mention("U0ALICE")


def part(key: str = "i-1", daily: float | None = 136.0) -> Part:
    buttons = tuple(warning_buttons(key, "us-east-1", True))
    return Part(
        key, f"cg-warn-{key}", "GPU machine", daily, f"`{key}` did nothing.", f"`{key}`", "Stops soon.", buttons=buttons
    )


def after(change: live.Change, base: Part | None = None) -> Part:
    return live.settled(change, base or part())


@pytest.mark.parametrize(
    ("change", "header"),
    [
        (lambda p: p, "Idle GPU machine · $136/day"),
        (live.kept(NOW, ALICE, "UTC"), "Kept: GPU machine · $136/day"),
        (live.stopped(NOW, Mrkdwn(""), "UTC"), "Stopped: GPU machine · saves $136/day"),
        (live.stopped(NOW, None, "UTC", word="Hibernated"), "Hibernated: GPU machine · saves $136/day"),
        (live.running(NOW, ALICE, "UTC"), "Started again: GPU machine · $136/day"),
        (live.at_work(Mrkdwn("someone typed")), "At work: GPU machine · $136/day"),
        (live.gone(NOW, "terminated", "UTC"), "Gone: GPU machine"),
        (live.exempt("demo rig"), "Exempt: GPU machine · $136/day"),
    ],
)
def test_a_parts_header_is_its_state_and_its_cost(change: live.Change, header: str) -> None:
    message = Live((after(change),)).message()
    assert message.blocks[0]["text"]["text"] == header


def test_each_status_is_one_sentence_with_slacks_dates_and_only_the_buttons_that_still_mean_something() -> None:
    kept = after(live.kept(NOW, ALICE, "Europe/Paris"))
    assert as_read(kept.status) == "Kept until Sat 21 Nov 15:00 CET by <@U0ALICE>."
    assert kept.buttons == ()
    while_busy = after(live.kept(None, ALICE, "UTC", how="tag"))
    assert (
        while_busy.status == "Kept while it works by <@U0ALICE> (tag): costguard looks again after a whole idle window."
    )
    stopped = after(
        live.stopped(
            NOW, Mrkdwn(""), "UTC", note=Mrkdwn("Its disks are kept."), buttons=start_buttons("i-1", "us-east-1")
        )
    )
    assert as_read(stopped.status) == "Stopped Sat 21 Nov 14:00 UTC by costguard. Its disks are kept."
    assert [b["action_id"] for b in stopped.buttons] == [Button.START]
    by_someone = after(live.stopped(NOW, None, "UTC"))
    assert as_read(by_someone.status) == "Stopped Sat 21 Nov 14:00 UTC."  # AWS told of it: nobody is named
    assert dates_in(after(live.running(NOW, ALICE, "UTC")).status) == [int(NOW.timestamp())]
    skipped = after(live.without(Button.STOP_NOW, Mrkdwn("Done.")))
    assert Button.STOP_NOW not in [b["action_id"] for b in skipped.buttons]
    assert skipped.status == "Stops soon. Done."


def test_a_grouped_header_counts_what_is_still_idle_and_its_cost_then_the_rest() -> None:
    parts = (part("i-1"), part("i-2"), part("i-3", daily=None))
    assert live.title(parts) == "3 idle GPU machines · $272/day"
    one_kept = (after(live.kept(NOW, ALICE, "UTC"), parts[0]), *parts[1:])
    assert live.title(one_kept) == "2 idle GPU machines · $136/day · 1 kept"
    stopped = [after(live.stopped(NOW, Mrkdwn(""), "UTC"), p) for p in parts[:2]]
    assert live.title(stopped) == "2 GPU machines stopped · saves $272/day"
    mixed = (stopped[0], one_kept[0], after(live.gone(None, "terminated", "UTC"), parts[2]))
    assert live.title(mixed) == "3 GPU machines: 1 kept, 1 stopped, 1 gone"


def test_among_others_a_part_is_one_line_its_keeps_and_its_stop_in_one_menu() -> None:
    message = Live((part("i-1"), part("i-2")), lead=Mrkdwn("<@U0ALICE>, these are idle.")).message()
    assert [b["type"] for b in message.blocks] == ["header", "section", "section", "section"]
    menu = message.blocks[2]["accessory"]
    assert (menu["type"], menu["placeholder"]["text"]) == ("static_select", "Keep or stop…")
    chosen = [json.loads(o["value"])["b"] for o in menu["options"]]
    assert chosen == [Button.KEEP_2H, Button.KEEP_TOMORROW, Button.KEEP_MONDAY, Button.KEEP_WHILE_BUSY, Button.STOP_NOW]
    assert message.blocks[2]["block_id"] == "cg-warn-i-1"
    assert menu["confirm"]["title"]["text"] == "Do it now?"  # a stop among its choices: one slip stops nothing


def test_a_menu_without_a_stop_asks_nothing() -> None:
    keeps = [
        b
        for b in warning_buttons("i-1", "us-east-1", True)
        if b["action_id"] not in (Button.STOP_NOW, Button.STOP_NO_START)
    ]
    menu = as_menu(keeps)
    assert "confirm" not in menu


def test_alone_a_part_shows_at_most_four_buttons_and_the_rest_in_its_overflow_menu() -> None:
    many = warning_buttons("i-1", "us-east-1", True, start_at="2026-11-22T05:00:00Z", for_runs=True)
    [row] = [b for b in Live((replace(part(), buttons=tuple(many)),)).message().blocks if b["type"] == "actions"]
    shown = [e["action_id"] for e in row["elements"] if e["type"] == "button"]
    assert shown == [Button.KEEP_2H, Button.KEEP_TOMORROW, Button.STOP_NOW, Button.STOP_NO_START]
    overflow = row["elements"][-1]
    assert (overflow["type"], overflow["action_id"]) == ("overflow", "costguard.menu")
    chosen = [json.loads(o["value"])["b"] for o in overflow["options"]]
    assert chosen == [Button.KEEP_FOR_RUNS, Button.KEEP_WHILE_BUSY, Button.DONT_START]
    assert json.loads(overflow["options"][0]["value"])["i"] == "i-1"  # each option carries its machine


def test_a_part_of_four_buttons_or_fewer_shows_them_all_as_buttons() -> None:
    few = start_buttons("i-1", "us-east-1", learned_start=True, for_runs=True)
    [row] = [b for b in Live((replace(part(), buttons=tuple(few)),)).message().blocks if b["type"] == "actions"]
    assert [e["type"] for e in row["elements"]] == ["button"] * 3


def test_what_is_kept_reads_back_as_it_was_drawn() -> None:
    message = Live((part("i-1"), after(live.kept(NOW, ALICE, "UTC"), part("i-2"))), lead=Mrkdwn("x"), suffix=" (1/2)")
    again = Live.from_json(message.to_json())
    assert again == message
    assert again.message() == message.message()
    assert again.parts[1].phase is Phase.KEPT
