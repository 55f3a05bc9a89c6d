"""One message per recipient per sweep, through the handlers: an owner's idle machines in one warning
with a part each, a click on one machine changing that part only, a kill mid-send costing at most one
duplicate, sixty machines split under Block Kit's limit, and the alerts channel's one roll-up of the
machines whose owners Slack cannot reach."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core import tags
from costguard.runtime import Runtime
from costguard.slack.blocks import MAX_BLOCKS
from testing.handlers import load_event
from testing.killpoints import KillSwitch
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read
from tests.faults.conftest import armed_on, switch
from tests.integration.conftest import REGION, TABLE, tags_of
from tests.integration.test_buttons import call as click_call
from tests.integration.test_buttons import env, http_event, queued, runtime_for
from tests.integration.test_idle_stopper import app, idle, launch, publish

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

__all__ = ["env", "switch"]
SWEEP = {"costguard": "sweep"}


def sweep(runtime: Runtime, at: datetime, context: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(runtime, "now", lambda: at)
    return app.lambda_handler(SWEEP, context, runtime=runtime)


def idle_machines(now: datetime, count: int, owner: str = "alice@example.com") -> list[str]:
    ids = [launch(now, owner=owner) for _ in range(count)]
    for iid in ids:
        publish(iid, now, gpus=[idle()])
    return ids


def parts(message: Any) -> list[str]:
    """The machines a message tells about, in order, by the block ids that mark their parts."""
    return [str(b["block_id"]) for b in message.blocks if str(b.get("block_id", "")).startswith("cg-warn-")]


def warn_entries() -> list[str]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    return [i["instance_id"]["S"] for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "warn"]


def test_five_idle_machines_of_one_owner_are_one_warning_with_a_part_each(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = idle_machines(now, 5)

    result = sweep(runtime, now, lambda_context, monkeypatch)

    [message] = slack.messages
    assert (message.channel, message.direct) == ("U0ALICE", True)
    assert message.blocks[0]["text"]["text"].startswith("5 idle GPU machines · $")
    assert sorted(p.split("-")[3] for p in parts(message)) == sorted(i.split("-")[1] for i in ids)
    menus = [
        json.loads(o["value"])["i"] for b in message.blocks if "accessory" in b for o in b["accessory"]["options"][:1]
    ]
    assert sorted(menus) == sorted(ids)  # each machine its own keeps
    assert sorted(result["regions"][REGION]["warned"]) == sorted(ids)
    assert sorted(warn_entries()) == sorted(ids)  # each machine its own record
    for iid in ids:
        assert tags.IDLE_WARNED_AT in tags_of(iid)


def test_keep_on_the_third_machine_updates_only_its_part(
    aws: None, slack: SlackStandIn, env: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    idle_machines(now, 5)
    sweep(runtime, now, lambda_context, monkeypatch)
    [message] = slack.messages
    lines = [b for b in message.blocks if str(b.get("block_id", "")).startswith("cg-warn-")]
    third = lines[2]
    keep = next(o for o in third["accessory"]["options"] if json.loads(o["value"])["b"] == "costguard.keep_2h")
    iid = json.loads(keep["value"])["i"]
    before = [dict(b) for b in message.blocks]

    payload: dict[str, Any] = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"] = [
        {"type": "static_select", "action_id": "costguard.menu", "block_id": third["block_id"], "selected_option": keep}
    ]
    payload["actions"][0]["action_ts"] = message.ts
    payload["message"].update(ts=message.ts, blocks=before)
    payload["container"].update(message_ts=message.ts, channel_id=message.channel)
    payload["response_url"] = slack.response_url(message.ts)
    at = datetime.fromtimestamp(float(message.ts), now.tzinfo)
    assert click_call(http_event(payload, at=at), runtime, lambda_context, monkeypatch, at=at)["statusCode"] == 200
    click_call({"Records": queued(env)}, runtime, lambda_context, monkeypatch, at=at)

    assert message.updated
    assert len(slack.messages) == 1, "changed in place, nothing new posted"
    changed = [k for k, (a, b) in enumerate(zip(before, message.blocks, strict=True)) if a != b]
    assert changed == [0, before.index(third)], "the header that counts them, and the kept machine's line"
    assert message.blocks[0]["text"]["text"].endswith(" · 1 kept")
    line = message.blocks[before.index(third)]
    assert "Kept until " in as_read(line)
    assert "by <@U0ALICE>." in as_read(line)
    assert "accessory" not in line, "no keep left to press"
    assert tags.KEEP_UNTIL in tags_of(iid)
    others = [json.loads(b["accessory"]["options"][0]["value"])["i"] for b in message.blocks if "accessory" in b]
    assert len(others) == 4
    assert all(tags.KEEP_UNTIL not in tags_of(o) for o in others)


def test_a_kill_in_the_middle_of_sending_costs_at_most_one_duplicate(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    switch: KillSwitch,
) -> None:
    owners = [f"owner{k}@example.com" for k in range(4)]
    slack.users.update({o: f"U0OWNER{k}" for k, o in enumerate(owners)})
    ids = [iid for o in owners for iid in idle_machines(now, 3, owner=o)]
    first = now - timedelta(minutes=20)
    with armed_on(switch, "slack:chat.postMessage", after=True):  # one owner's message out, unrecorded
        sweep(runtime, first, lambda_context, monkeypatch)
    for later in (1, 3, 15):  # Lambda's two retries, then the next scheduled sweep
        sweep(runtime, first + timedelta(minutes=later), lambda_context, monkeypatch)

    told = Counter(p for m in slack.messages for p in parts(m))
    assert len(told) == len(ids), "every machine warned"
    again = [m for m in slack.messages if all(told[p] > 1 for p in parts(m))]
    assert len(again) <= 1, "at most the one message the kill cut off"
    assert sorted(warn_entries()) == sorted(ids), "one record per machine"
    assert {m.channel for m in slack.messages} == {f"U0OWNER{k}" for k in range(4)}


@pytest.mark.usefixtures("indexed_metrics")  # sixty machines' metrics: minutes in moto's own GetMetricData
def test_sixty_machines_of_one_owner_are_split_under_the_block_limit(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = idle_machines(now, 60)

    sweep(runtime, now, lambda_context, monkeypatch)

    assert all(m.channel == "U0ALICE" for m in slack.messages)
    assert all(len(m.blocks) <= MAX_BLOCKS for m in slack.messages)
    told = [p for m in slack.messages for p in parts(m)]
    assert len(told) == len(set(told)) == 60
    assert len(slack.messages) <= 8
    assert sorted(warn_entries()) == sorted(ids)


def test_the_machines_whose_owners_slack_cannot_reach_are_one_roll_up_in_the_alerts_channel(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    strangers = [iid for o in ("bob@example.com", "dan@example.com") for iid in idle_machines(now, 2, owner=o)]
    unowned = idle_machines(now, 1, owner="")
    mine = idle_machines(now, 1)

    sweep(runtime, now, lambda_context, monkeypatch)

    [roll_up] = slack.messages_to("C0ALERTS")
    assert roll_up.blocks[0]["text"]["text"].startswith("5 idle GPU machines · $")
    lines = [b for b in roll_up.blocks if str(b.get("block_id", "")).startswith("cg-warn-")]
    assert len(lines) == 5
    assert all(b["accessory"]["type"] == "static_select" for b in lines)
    assert sum("owner bob" in b["text"]["text"] for b in lines) == 2  # each line names its owner, not an address
    why = roll_up.blocks[-1]["elements"][0]["text"]
    assert why == "Here because Slack cannot reach their owners: bob, dan, 1 machine with no owner costguard can name."
    assert "@example.com" not in json.dumps(roll_up.blocks)
    assert [m.channel for m in slack.messages if m.channel != "C0ALERTS"] == ["U0ALICE"]
    assert sorted(warn_entries()) == sorted([*strangers, *unowned, *mine])
    # Where a line offers a keep it offers Stop now too (an admin may stop what nobody on Slack can keep).
    said = json.dumps(roll_up.blocks)
    assert said.count("costguard.stop_now") == said.count("costguard.keep_2h") > 0
