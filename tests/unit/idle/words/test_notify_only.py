"""A warning's words and buttons follow what costguard will do: in notify-only mode it stops (and so starts) nothing,
so the warning says the stop enforce mode would make, offers no keep, no stop and no promised start, only its
*Why?*; a grouped warning none of whose machines can be kept promises no stop above its lines."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core.records import Instance, Price
from costguard.core.settings import Mode
from costguard.idle.acts.delivery import marker
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.judgement import Judgement, Verdict
from costguard.idle.words import messages as idle
from costguard.idle.words.grouping import Part, gather
from costguard.slack import live
from costguard.slack.blocks import mention
from costguard.slack.buttons import Button
from testing.slack_text import as_read

NOW = datetime(2026, 11, 20, 14, 0, tzinfo=UTC)
PRICE = Price(5.672, "pricing-api")
ALICE = mention("U0ALICE")
RUNS = "runs `nightly.sh` at 02:00 UTC (its crontab)"


def machine(k: int = 1) -> Instance:
    return Instance(f"i-{k:017d}", "us-east-1", "g5.12xlarge", "running", NOW - timedelta(hours=6), tags={})


def decided(k: int = 1, *, will_stop: bool = True) -> Decision:
    judgement = Judgement(Verdict.IDLE, "GPU max 1% < 5%", idle_since=NOW - timedelta(hours=3))
    stop_after = NOW + timedelta(minutes=30) if will_stop else None
    start_at = datetime(2026, 11, 21, 1, 45, tzinfo=UTC)
    decision = Decision(f"i-{k:017d}", Action.WARN, "idle", stop_after=stop_after, judgement=judgement)
    return replace(decision, next_work=RUNS, start_at=start_at, runs=RUNS, will_stop=will_stop)


def grouped(mode: Mode, *, will_stop: bool = True) -> list[Part]:
    parts = []
    for k in (1, 2):
        part = idle.idle_warning(machine(k), decided(k, will_stop=will_stop), PRICE, ALICE, NOW, mode=mode)
        at = marker("warn", machine(k).instance_id, "2026-11-20T14:00:00Z")
        parts.append(Part(live.Live((part,)).message(), at, "warn", part, ALICE))
    return parts


def test_a_notify_only_warning_says_the_stop_enforce_mode_would_make_and_offers_only_why() -> None:
    part = idle.idle_warning(machine(), decided(), PRICE, ALICE, NOW, mode=Mode.NOTIFY_ONLY)

    assert [b["action_id"] for b in part.buttons] == [Button.WHY]
    assert as_read(part.status) == (
        "In enforce mode costguard would stop it *Fri 20 Nov 14:30 UTC*; in notify-only mode it stops nothing."
    )
    assert part.promise == "", "no stop, so no start after it"
    assert "costguard:keep-until" not in part.detail, "no tag to keep it by: nothing to keep it from"


def test_the_same_warning_in_enforce_mode_keeps_its_stop_its_start_and_its_keeps() -> None:
    part = idle.idle_warning(machine(), decided(), PRICE, ALICE, NOW, mode=Mode.ENFORCE)

    acts = [b["action_id"] for b in part.buttons]
    assert {Button.KEEP_2H, Button.STOP_NOW, Button.WHY} <= set(acts)
    assert "costguard stops it *" in as_read(part.status)
    assert "unless you keep it" in as_read(part.status)
    assert "costguard starts it again *" in as_read(part.promise)
    assert "costguard:keep-until" in part.detail


def test_a_grouped_warning_with_nothing_to_keep_promises_no_stop_in_its_lead_or_footer() -> None:
    for mode, will_stop in ((Mode.NOTIFY_ONLY, True), (Mode.ENFORCE, False)):
        [gathered] = gather(grouped(mode, will_stop=will_stop))
        blocks = gathered.message.blocks
        assert blocks[1]["text"]["text"] == "<@U0ALICE>, costguard stops none of these: each line says why."
        assert "unless you keep" not in as_read(blocks)
        assert "costguard:keep-until" not in as_read(blocks[-1])
        assert [b["accessory"]["action_id"] for b in blocks if "accessory" in b] == [Button.WHY] * 2


def test_a_grouped_warning_in_enforce_mode_still_says_each_is_stopped_unless_kept() -> None:
    [gathered] = gather(grouped(Mode.ENFORCE))
    blocks = gathered.message.blocks
    assert blocks[1]["text"]["text"].endswith(
        "costguard stops each one still idle at the time shown unless you keep it."
    )
    assert "costguard:keep-until" in as_read(blocks[-1])
