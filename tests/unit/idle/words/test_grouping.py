"""One message per recipient: several machines' notices gathered, each keeping its own part, split in
order under Block Kit's 50 blocks; cost first, the owner addressed once, one compact line per machine; a
change to one machine changes that machine's part (and the header that counts them) only."""

from __future__ import annotations

import json
import re
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
from costguard.slack import live
from costguard.slack.blocks import MAX_BLOCKS, Mrkdwn, mention, person
from costguard.slack.buttons import MENU, Button
from costguard.slack.interactions import parse_interaction
from testing.handlers import load_event
from testing.slack_text import as_read, dates_in

NOW = datetime(2026, 11, 20, 14, 0, tzinfo=UTC)
PRICE = Price(5.672, "pricing-api")
ALICE = mention("U0ALICE")


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


def warning(k: int, name: str = "", who: Mrkdwn = ALICE) -> Part:
    box = machine(k, name)
    part = idle.idle_warning(box, decision(box.instance_id, Action.WARN), PRICE, who, NOW, zone="Europe/Paris")
    return Part(
        live.Live((part,)).message(), marker("warn", box.instance_id, "2026-11-20T14:00:00Z"), "warn", part, who
    )


def stop(k: int) -> Part:
    box = machine(k)
    part = idle.stopped_part(box, decision(box.instance_id, Action.STOP), PRICE, ALICE, NOW, zone="UTC")
    return Part(
        live.Live((part,)).message(), marker("stop", box.instance_id, "2026-11-20T13:30:00Z"), "stop", part, ALICE
    )


def markers_of(blocks: Any) -> list[str]:
    return [b["block_id"] for b in blocks if str(b.get("block_id", "")).startswith("cg-")]


def words(blocks: Any) -> int:
    """The words a person reads in a message: its text, its buttons' labels and menus' choices, dates as read."""
    said: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") in ("mrkdwn", "plain_text") and isinstance(value.get("text"), str):
                said.append(value["text"])
            for key, item in value.items():
                if key not in ("confirm", "placeholder"):
                    walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(blocks)
    return len(re.sub(r"<@(\w+)>", r"@\1", as_read(" ".join(said))).split())


def test_one_machine_is_told_in_its_own_message_cost_first_with_the_stop_in_the_readers_time() -> None:
    part = warning(1)
    [gathered] = gather([part])
    message = gathered.message
    assert gathered.carried == [0]
    assert message.blocks[0]["block_id"] == part.marker  # its first block marks it, to be found in Slack
    assert message.blocks[0]["text"]["text"] == "Idle GPU machine · $136/day"
    said = message.blocks[1]["text"]["text"]
    assert said.startswith("<@U0ALICE>, your g5.12xlarge `i-00000000000000001` has done no work for *3 h*.")
    assert dates_in(said) == [int((NOW + timedelta(minutes=30)).timestamp())]  # the stop, in each reader's zone
    assert "costguard stops it *Fri 20 Nov 15:30 CET* unless you keep it." in as_read(said)
    assert "@example.com" not in json.dumps(message.blocks)  # the owner by mention, never by address
    assert [b["type"] for b in message.blocks] == ["header", "section", "actions", "context"]
    *shown, more = message.blocks[2]["elements"]
    assert [e["text"]["text"] for e in shown] == [
        "Keep 2 h",
        "Keep until 09:00 tomorrow (your time)",
        "Keep until Monday 09:00 (your time)",
        "Stop now",
    ]
    assert [o["text"]["text"] for o in more["options"]] == ["Keep while it works", "Why?"]  # the overflow menu
    assert words(message.blocks) < 80
    assert gathered.live is not None
    assert gathered.live.parts[0].marker == part.marker


def test_five_idle_machines_of_an_owner_are_one_warning_a_line_each_the_owner_greeted_once() -> None:
    parts = [warning(k) for k in range(5)]
    [gathered] = gather(parts)
    message = gathered.message

    assert gathered.carried == [0, 1, 2, 3, 4]
    assert message.blocks[0]["text"]["text"] == "5 idle GPU machines · $681/day"
    assert message.blocks[1]["text"]["text"].startswith("<@U0ALICE>, costguard stops each one still idle")
    assert json.dumps(message.blocks).count("<@U0ALICE>") == 1
    assert markers_of(message.blocks) == [p.marker for p in parts]  # each part one line, marked, in order
    lines = message.blocks[2:7]
    assert all(b["text"]["text"].startswith("*$136/day* · g5.12xlarge `i-") for b in lines)
    menus = [b["accessory"] for b in lines]
    assert {m["type"] for m in menus} == {"static_select"}
    assert [json.loads(o["value"])["b"] for o in menus[0]["options"]] == [
        Button.KEEP_2H,
        Button.KEEP_TOMORROW,
        Button.KEEP_MONDAY,
        Button.KEEP_WHILE_BUSY,
        Button.STOP_NOW,
        Button.WHY,
    ]  # a line's one accessory: Stop now, wherever a keep is, is an option too
    assert "5 idle GPU machines · $681/day" in message.text
    assert len(message.blocks) == 8  # a header, the owner, five lines, the footer
    assert words(message.blocks) < 80 * 5


def test_sixty_machines_are_split_in_order_across_as_few_messages_as_the_block_limit_allows() -> None:
    parts = [warning(k) for k in range(60)]
    messages = gather(parts)

    assert [len(g.carried) for g in messages] == [47, 13]  # a header, the owner and a footer around the lines
    assert all(len(g.message.blocks) <= MAX_BLOCKS for g in messages)
    assert [k for g in messages for k in g.carried] == list(range(60))  # each once, in order
    told = [mk for g in messages for mk in markers_of(g.message.blocks)]
    assert told == [p.marker for p in parts]
    assert [g.message.blocks[0]["text"]["text"] for g in messages] == [
        "47 idle GPU machines · $6,398/day (1/2)",
        "13 idle GPU machines · $1,770/day (2/2)",
    ]


def test_stops_of_an_owner_are_one_notice_each_machine_with_start_it_again_and_its_why() -> None:
    [gathered] = gather([stop(1), stop(2), stop(3)])
    message = gathered.message
    assert message.blocks[0]["text"]["text"] == "3 GPU machines stopped · saves $408/day"
    menus = [b["accessory"] for b in message.blocks if "accessory" in b]
    assert [m["placeholder"]["text"] for m in menus] == ["Start it again…"] * 3  # the line's one act names it
    chosen = [[json.loads(o["value"]) for o in m["options"]] for m in menus]
    assert [[c["b"] for c in line] for line in chosen] == [[Button.START, Button.WHY]] * 3
    assert [{c["i"] for c in line} for line in chosen] == [{f"i-{k:017d}"} for k in (1, 2, 3)]
    assert all("Stopped Fri 20 Nov 14:00 UTC by costguard." in as_read(b) for b in message.blocks[2:5])


def test_the_alerts_channel_gets_a_line_per_machine_naming_its_owner_never_by_address() -> None:
    parts = [warning(k, who=person("bob@example.com")) for k in range(60)]
    messages = gather(parts, channel=True, why="Here because Slack cannot reach their owners: bob.")

    assert [len(g.carried) for g in messages] == [48, 12]  # a title and why
    first = messages[0].message
    line = first.blocks[1]
    assert line["block_id"] == parts[0].marker
    assert "`i-00000000000000000` · no work for 3 h · owner bob" in line["text"]["text"]
    assert line["accessory"]["action_id"] == MENU
    assert all(c["i"] == "i-00000000000000000" for c in (json.loads(o["value"]) for o in line["accessory"]["options"]))
    assert first.blocks[-1]["elements"][0]["text"] == "Here because Slack cannot reach their owners: bob."
    assert "@example.com" not in json.dumps(first.blocks)


def test_names_from_tags_are_escaped_once_in_a_gathered_message() -> None:
    hostile = "<!channel> & co"
    messages = gather([warning(1, hostile), warning(2, hostile)], channel=True, why=hostile)
    for gathered in messages:
        body = json.dumps(gathered.message.blocks) + str(gathered.message.text)
        assert "<!channel>" not in body
        assert "&amp;amp;" not in body
        assert "&lt;!channel&gt; &amp; co" in body


def test_a_keep_changes_the_pressed_machines_line_and_the_header_and_leaves_the_others_as_they_were() -> None:
    [gathered] = gather([warning(k) for k in range(5)])
    assert gathered.live is not None
    before = gathered.message.slack_blocks()
    kept = live.kept(NOW + timedelta(hours=19), ALICE, "Europe/Paris")

    changed = gathered.live.changed("i-00000000000000002", kept)

    assert changed is not None
    after = changed.message().slack_blocks()
    assert after[0]["text"]["text"] == "4 idle GPU machines · $545/day · 1 kept"
    differ = [k for k, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert differ == [0, 4]  # the header, and the third machine's line
    line = after[4]
    assert as_read(line["text"]["text"]).endswith("Kept until Sat 21 Nov 10:00 CET by <@U0ALICE>.")
    assert "accessory" not in line  # no keep is left to press
    assert gathered.live.changed("i-9", kept) is None  # a machine the message is not about


def test_a_message_from_before_live_ones_loses_the_pressed_machines_buttons_only() -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "section", "block_id": "cg-warn-i-1", "text": {"type": "mrkdwn", "text": "i-1 is idle"}},
        {"type": "actions", "block_id": "costguard:i-1", "elements": []},
        {"type": "actions", "block_id": "costguard:i-2", "elements": []},
    ]
    after = answered(blocks, "i-1", Mrkdwn("✅ <@U0ALICE> kept it"))
    assert after[1] == {**after[1], "type": "context", "block_id": "costguard:i-1"}
    assert after[1]["elements"][0]["text"] == "✅ <@U0ALICE> kept it"
    assert (after[0], after[2]) == (blocks[0], blocks[2])


@pytest.mark.parametrize("button", [Button.KEEP_2H, Button.KEEP_TOMORROW])
def test_a_choice_in_a_lines_menu_is_read_as_that_buttons_click(button: Button) -> None:
    [gathered] = gather([warning(k) for k in range(2)], channel=True, why="why")
    menu = gathered.message.blocks[1]["accessory"]
    option = next(o for o in menu["options"] if json.loads(o["value"])["b"] == button)
    payload = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"] = [
        {"type": "static_select", "action_id": MENU, "block_id": "x", "selected_option": option, "action_ts": "1.2"}
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

    assert [g.carried for g in messages] == [list(range(49)), list(range(49, 60))]  # no footer: 49
    for gathered in messages:
        blocks = gathered.message.slack_blocks()
        assert len(blocks) <= MAX_BLOCKS
        assert markers_of(blocks) == [parts[k].marker for k in gathered.carried]
        assert gathered.live is None  # a report: nothing to change later
    titles = [g.message.slack_blocks()[0]["text"]["text"] for g in messages]
    assert titles == [
        "[dry-run] 49 idle GPU machines costguard would warn about (1/2)",
        "[dry-run] 11 idle GPU machines costguard would warn about (2/2)",
    ]
    line = as_read(messages[0].message.blocks[1]["text"]["text"])
    assert line == (
        "*[dry-run]* *$136/day* · would warn alice and stop it Fri 20 Nov 14:30 UTC if still idle: "
        "g5.12xlarge `i-00000000000000000`."
    )
