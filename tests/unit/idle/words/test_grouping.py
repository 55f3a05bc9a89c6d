"""One message per recipient: several machines' notices gathered, each keeping its own part, split in
order under Block Kit's 50 blocks; a click on one machine's buttons changes that machine's part only."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest

from costguard.buttons.worker import answered
from costguard.core.records import Instance, Price
from costguard.idle.acts.delivery import marker
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.judgement import Judgement, Verdict
from costguard.idle.words import messages as idle
from costguard.idle.words.grouping import Part, gather
from costguard.slack.blocks import MAX_BLOCKS, Mrkdwn
from costguard.slack.buttons import MENU, Button
from costguard.slack.interactions import parse_interaction
from testing.handlers import load_event

NOW = datetime(2026, 11, 20, 14, 0, tzinfo=UTC)
PRICE = Price(5.672, "bundled")


def machine(k: int, name: str = "") -> Instance:
    return Instance(
        f"i-{k:017x}",
        "us-east-1",
        "g5.12xlarge",
        "running",
        NOW - timedelta(hours=6),
        tags={"Owner": "alice@example.com", **({"Name": name} if name else {})},
    )


def decision(iid: str, action: Action) -> Decision:
    judgement = Judgement(Verdict.IDLE, "GPU max 1% < 5%", idle_since=NOW - timedelta(hours=3))
    return Decision(iid, action, "idle", stop_after=NOW + timedelta(minutes=30), judgement=judgement)


def warning(k: int, name: str = "") -> Part:
    box = machine(k, name)
    message = idle.idle_warning(box, decision(box.instance_id, Action.WARN), PRICE, "alice@example.com", NOW)
    return Part(message, marker("warn", box.instance_id, "2026-11-20T14:00:00Z"), "warn")


def stop(k: int) -> Part:
    box = machine(k)
    message = idle.stop_notice(box, decision(box.instance_id, Action.STOP), PRICE, "alice@example.com", NOW)
    return Part(message, marker("stop", box.instance_id, "2026-11-20T13:30:00Z"), "stop")


def markers_of(blocks: Any) -> list[str]:
    return [b["block_id"] for b in blocks if str(b.get("block_id", "")).startswith("cg-")]


def test_one_machine_is_told_in_its_own_message_as_before() -> None:
    part = warning(1)
    [(message, carried)] = gather([part])
    assert carried == [0]
    assert message.blocks[1:] == part.message.blocks[1:]
    assert message.blocks[0]["block_id"] == part.marker  # its first block marks it, to be found in Slack


def test_five_idle_machines_of_an_owner_are_one_warning_with_a_part_each() -> None:
    parts = [warning(k) for k in range(5)]
    [(message, carried)] = gather(parts)

    assert carried == [0, 1, 2, 3, 4]
    assert message.blocks[0]["text"]["text"] == "5 idle GPU machines"
    assert markers_of(message.blocks) == [p.marker for p in parts]  # each part marked, in order
    actions = [b for b in message.blocks if b["type"] == "actions"]
    assert [a["block_id"] for a in actions] == [f"costguard:i-{k:017x}" for k in range(5)]  # each its own buttons
    body = json.dumps(message.blocks)
    assert body.count("*To keep it*") == 0  # each warning's own how-to gives way to one for all
    assert body.count("*To keep one*") == 1
    assert "5 idle GPU machines: " in message.text
    assert len(message.blocks) <= MAX_BLOCKS


def test_sixty_machines_are_split_in_order_across_as_few_messages_as_the_block_limit_allows() -> None:
    parts = [warning(k) for k in range(60)]
    messages = gather(parts)

    assert all(len(m.blocks) <= MAX_BLOCKS for m, _ in messages)
    assert [k for _, carried in messages for k in carried] == list(range(60))  # each once, in order
    told = [mk for m, _ in messages for mk in markers_of(m.blocks) if mk.startswith("cg-warn-")]
    assert told == [p.marker for p in parts]
    one_more = len(gather([warning(1), warning(2)])[0][0].blocks) - len(
        gather([warning(1), warning(2)])[0][0].blocks[:1]
    )
    one_more = (one_more - 1) // 2 + 1  # a machine's blocks and the divider before it
    for message, _ in messages[:-1]:  # as few as possible: no message could have taken the next machine too
        assert len(message.blocks) + one_more > MAX_BLOCKS
    assert [m.blocks[0]["text"]["text"] for m, _ in messages][:2] == [
        f"{len(messages[0][1])} idle GPU machines (1/{len(messages)})",
        f"{len(messages[1][1])} idle GPU machines (2/{len(messages)})",
    ]


def test_stops_of_an_owner_are_one_notice_each_machine_with_its_start_button() -> None:
    [(message, _)] = gather([stop(1), stop(2), stop(3)])
    assert message.blocks[0]["text"]["text"] == "Stopped 3 idle GPU machines"
    starts = [e for b in message.blocks if b["type"] == "actions" for e in b["elements"]]
    assert [e["action_id"] for e in starts] == [Button.START] * 3


def test_the_alerts_channel_gets_a_line_per_machine_with_its_keeps_in_a_menu_and_why() -> None:
    parts = [warning(k) for k in range(60)]
    messages = gather(parts, channel=True, why="Sent here because costguard cannot reach bob@example.com.")

    assert len(messages) == 2  # 48 lines a message: a title, a how-to and why
    first, _ = messages[0]
    line = first.blocks[1]
    assert line["block_id"] == parts[0].marker
    assert "i-00000000000000000" in line["text"]["text"]
    menu = line["accessory"]
    assert menu["type"] == "overflow"
    assert menu["action_id"] == MENU
    chosen = [json.loads(o["value"]) for o in menu["options"]]
    assert [c["b"] for c in chosen] == [
        Button.KEEP_WHILE_BUSY,
        Button.KEEP_2H,
        Button.KEEP_TOMORROW,
        Button.KEEP_MONDAY,
    ]  # Stop now stays a button with its own question: never in a menu
    assert all(c["i"] == "i-00000000000000000" for c in chosen)
    assert first.blocks[-1]["elements"][0]["text"] == "Sent here because costguard cannot reach bob@example.com."
    assert first.blocks[0]["text"]["text"].endswith("whose owners Slack cannot reach (1/2)")


def test_names_from_tags_are_escaped_once_in_a_gathered_message() -> None:
    hostile = "<!channel> & co"
    messages = gather([warning(1, hostile), warning(2, hostile)], channel=True, why=hostile)
    for message, _ in messages:
        body = json.dumps(message.blocks) + str(message.text)  # (a Mrkdwn would escape what it is added to)
        assert "<!channel>" not in body
        assert "&amp;amp;" not in body
        assert "&lt;!channel&gt; &amp; co" in body


def test_a_click_replaces_the_pressed_machines_buttons_and_leaves_the_others_as_they_were() -> None:
    [(message, _)] = gather([warning(k) for k in range(5)])
    blocks = message.slack_blocks()

    after = answered(blocks, "i-00000000000000002", Mrkdwn("✅ <@U0ALICE> kept it"))

    changed = [k for k, (a, b) in enumerate(zip(blocks, after, strict=True)) if a != b]
    assert len(changed) == 1
    [k] = changed
    assert after[k]["type"] == "context"
    assert after[k]["block_id"] == "costguard:i-00000000000000002"
    assert after[k]["elements"][0]["text"] == "✅ <@U0ALICE> kept it"


def test_a_choice_in_a_lines_menu_updates_that_line_only() -> None:
    [(message, _)] = gather([warning(k) for k in range(3)], channel=True, why="why")
    blocks = message.slack_blocks()
    after = answered(blocks, "i-00000000000000001", Mrkdwn("✅ kept"))
    assert after[2]["text"]["text"].endswith("\n✅ kept")
    assert "accessory" not in after[2]
    assert after[1] == blocks[1]
    assert after[3] == blocks[3]


@pytest.mark.parametrize("button", [Button.KEEP_2H, Button.KEEP_TOMORROW])
def test_a_choice_in_a_menu_is_read_as_that_buttons_click(button: Button) -> None:
    [(message, _)] = gather([warning(k) for k in range(2)], channel=True, why="why")
    menu = message.blocks[1]["accessory"]
    option = next(o for o in menu["options"] if json.loads(o["value"])["b"] == button)
    payload = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"] = [
        {"type": "overflow", "action_id": MENU, "block_id": "x", "selected_option": option, "action_ts": "1.2"}
    ]
    click = parse_interaction(urlencode({"payload": json.dumps(payload)}))
    assert click is not None
    assert (click.button, click.instance_id, click.region) == (button, "i-00000000000000000", "us-east-1")


def test_sixty_dry_run_reports_are_two_alerts_channel_messages_each_machine_in_one() -> None:
    # dry-run's first sweep over a large account: what it would do, one line a machine, not 60 messages.
    parts = []
    for k in range(60):
        box = machine(k)
        report = idle.dry_run_notice(box, decision(box.instance_id, Action.WARN), PRICE, "alice@example.com")
        parts.append(Part(report, marker("would-warn", box.instance_id, "2026-11-20T00:00:00Z"), "would-warn"))

    messages = gather(parts, channel=True)

    assert [carried for _, carried in messages] == [list(range(49)), list(range(49, 60))]  # no footer: 49
    for message, carried in messages:
        blocks = message.slack_blocks()
        assert len(blocks) <= MAX_BLOCKS
        assert markers_of(blocks) == [parts[k].marker for k in carried]
    titles = [message.slack_blocks()[0]["text"]["text"] for message, _ in messages]
    assert titles == [
        "[dry-run] 49 idle GPU machines costguard would warn about (1/2)",
        "[dry-run] 11 idle GPU machines costguard would warn about (2/2)",
    ]
