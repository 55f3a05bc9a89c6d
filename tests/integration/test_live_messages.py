"""Each message is the current state, through the handlers: the warning a sweep posts changes in place after
every click (Keep, Stop now, Start it again) and every later event about the machine (its stop by the sweep,
a keep by tag, work found after all, started again, terminated), its header, status and buttons those of the
new state; the owner still gets a new message for a stop, as a reply under the warning; in a grouped message
only the machine's own line (and the header that counts them) changes."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import boto3
import pytest

from costguard.core import tags
from costguard.runtime import Runtime
from testing.handlers import load_event
from testing.slack_standin import Posted, SlackStandIn
from testing.slack_text import as_read, dates_in, marked, notices
from tests.integration.conftest import REGION, ec2, midday, report, tags_of
from tests.integration.test_activity_check import POLICY
from tests.integration.test_buttons import call as click_call
from tests.integration.test_buttons import env, http_event, queued, runtime_for
from tests.integration.test_idle_stopper import app, idle, launch, publish, state_of

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

__all__ = ["env"]
SWEEP = {"costguard": "sweep"}


def sweep(runtime: Runtime, at: datetime, context: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(runtime, "now", lambda: at)
    return app.lambda_handler(SWEEP, context, runtime=runtime)


def event(runtime: Runtime, iid: str, state: str, at: datetime, context: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """EC2's state-change event for the machine, as EventBridge delivers it to the idle stopper."""
    change = load_event("idle_stopper/ec2-state-running.json")
    change.update(time=at.strftime("%Y-%m-%dT%H:%M:%SZ"), region=REGION)
    change["detail"] = {"instance-id": iid, "state": state}
    monkeypatch.setattr(runtime, "now", lambda: at)
    return app.lambda_handler(change, context, runtime=runtime)


def press(
    slack: SlackStandIn,
    message: Posted,
    action_id: str,
    runtime: Runtime,
    queue: str,
    at: datetime,
    context: Any,
    monkeypatch: pytest.MonkeyPatch,
    *,
    machine: str = "",
) -> dict[str, Any]:
    """A person presses a button of the message as Slack shows it now (or chooses it from a machine's menu):
    Slack signs and posts the click to the receiver, and the worker takes it from the queue."""
    action: dict[str, Any] | None = None
    for block in message.blocks:
        for element in [*block.get("elements", []), *([block["accessory"]] if "accessory" in block else [])]:
            if element.get("action_id") == action_id and machine in element.get("value", ""):
                action = {"type": "button", "action_id": action_id, "value": element["value"]}
            for option in element.get("options", []):
                chosen = json.loads(option["value"])
                if chosen["b"] == action_id and machine in chosen["i"]:
                    action = {"type": "static_select", "action_id": element["action_id"], "selected_option": option}
            if action is not None:
                break
        if action is not None:
            action["block_id"] = block.get("block_id", "")
            break
    assert action is not None, f"no {action_id} on the message any more"
    payload: dict[str, Any] = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"] = [{**action, "action_ts": f"{at.timestamp():.6f}"}]
    payload["message"].update(ts=message.ts, blocks=[dict(b) for b in message.blocks])
    payload["container"].update(message_ts=message.ts, channel_id=message.channel)
    payload["response_url"] = slack.response_url(message.ts)
    assert click_call(http_event(payload, at=at), runtime, context, monkeypatch, at=at)["statusCode"] == 200
    return click_call({"Records": queued(queue)}, runtime, context, monkeypatch, at=at)


def header(message: Posted) -> str:
    return str(message.blocks[0]["text"]["text"])


def buttons(message: Posted) -> list[str]:
    """The actions a message still offers: its buttons, and its menus' choices."""
    found = []
    for block in message.blocks:
        for element in [*block.get("elements", []), *([block["accessory"]] if "accessory" in block else [])]:
            if element.get("type") == "button":
                found.append(str(element["action_id"]))
            found += [json.loads(o["value"])["b"] for o in element.get("options", [])]
    return found


def idle_machine(now: datetime, owner: str = "alice@example.com") -> str:
    iid = launch(now, owner=owner)
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    return iid


def test_keep_2h_changes_the_warning_itself_to_kept_until_a_time_each_reader_sees_in_their_zone(
    aws: None, slack: SlackStandIn, env: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = idle_machine(now)
    sweep(runtime, now, lambda_context, monkeypatch)
    [warning] = slack.messages
    assert header(warning) == "Idle GPU machine · $136/day"
    assert "costguard.keep_2h" in buttons(warning)

    at = now + timedelta(minutes=5)
    result = press(slack, warning, "costguard.keep_2h", runtime, env, at, lambda_context, monkeypatch)

    assert result["clicks"][0]["status"] == "done"
    assert [m.ts for m in slack.messages] == [warning.ts], "changed in place: nothing new posted"
    assert warning.updated
    assert "chat.update" in slack.calls
    assert "response_url" not in slack.calls  # the kept message, drawn again, not the click's copy patched
    assert header(warning) == "Kept: GPU machine · $136/day"
    status = warning.blocks[1]["text"]["text"]
    assert status.endswith(" by <@U0ALICE>.")
    assert dates_in(status) == [int((at + timedelta(hours=2)).timestamp())]  # the time in each reader's zone
    assert "costguard stops it" not in as_read(warning.blocks), "the stop it no longer makes is gone"
    assert buttons(warning) == [], "no button means anything now"
    assert tags_of(iid)[tags.KEEP_UNTIL]


def test_stop_now_then_start_it_again_change_the_same_message_each_time(
    aws: None, slack: SlackStandIn, env: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = idle_machine(now)
    sweep(runtime, now, lambda_context, monkeypatch)
    [warning] = slack.messages

    stopped_at = now + timedelta(minutes=5)
    press(slack, warning, "costguard.stop_now", runtime, env, stopped_at, lambda_context, monkeypatch)

    assert state_of(iid) in ("stopping", "stopped")
    assert header(warning) == "Stopped: GPU machine · saves $136/day"
    said = as_read(warning.blocks[1])
    assert "by <@U0ALICE>. Its disks are kept." in said
    assert buttons(warning) == ["costguard.start"], "Keep and Stop now are gone; Start it again is offered"

    started_at = now + timedelta(minutes=20)
    press(slack, warning, "costguard.start", runtime, env, started_at, lambda_context, monkeypatch)

    assert state_of(iid) in ("pending", "running")
    assert header(warning) == "Started again: GPU machine · $136/day"
    assert dates_in(warning.blocks[1]) == [int(started_at.timestamp())]
    assert buttons(warning) == []
    assert len(slack.messages) == 1, "one message told the whole story"


def test_the_sweeps_stop_changes_the_warning_and_its_notice_is_a_reply_then_events_follow_the_machine(
    aws: None, slack: SlackStandIn, env: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    earlier = now - timedelta(minutes=35)
    iid = idle_machine(earlier)
    sweep(runtime, earlier, lambda_context, monkeypatch)
    [warning] = slack.messages
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))  # still idle through the grace period

    sweep(runtime, now, lambda_context, monkeypatch)

    assert state_of(iid) in ("stopping", "stopped")
    assert header(warning) == "Stopped: GPU machine · saves $136/day"
    assert "Stopped " in as_read(warning.blocks[1])
    assert "by costguard. Its disks are kept." in as_read(warning.blocks[1])
    assert buttons(warning) == ["costguard.start", "costguard.why"], "its Keep buttons gone; Start it again offered"
    [reply] = notices(slack.messages, "stop")
    assert (reply.channel, reply.ts != warning.ts) == (warning.channel, True)  # a new message: the owner must know
    assert header(reply) == "Stopped: GPU machine · saves $136/day"
    assert as_read(reply.blocks[1]).endswith('Its disks are kept. The warning above shows what follows."}}')
    assert buttons(reply) == [], "its button lives on the warning it points to"
    assert marked(warning, "warn"), "the warning keeps its own marker"

    event(runtime, iid, "running", now + timedelta(hours=1), lambda_context, monkeypatch)
    assert header(warning) == "Started again: GPU machine · $136/day"
    assert buttons(warning) == []
    event(runtime, iid, "terminated", now + timedelta(hours=2), lambda_context, monkeypatch)
    assert header(warning) == "Gone: GPU machine"
    assert "terminated" in warning.blocks[1]["text"]["text"]
    assert len(slack.messages) == 2


def test_a_grouped_warning_follows_each_machine_a_keep_by_click_and_two_stops_by_the_sweep(
    aws: None, slack: SlackStandIn, env: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    earlier = now - timedelta(minutes=35)
    ids = [idle_machine(earlier) for _ in range(3)]
    sweep(runtime, earlier, lambda_context, monkeypatch)
    [warning] = slack.messages
    assert header(warning) == "3 idle GPU machines · $408/day"
    kept = ids[1]
    press(slack, warning, "costguard.keep_2h", runtime, env, earlier, lambda_context, monkeypatch, machine=kept)
    assert header(warning) == "2 idle GPU machines · $272/day · 1 kept"
    kept_line = next(b for b in warning.blocks if kept in json.dumps(b))
    for iid in ids:
        publish(iid, now, gpus=[idle(48)], cpu=idle(48))

    sweep(runtime, now, lambda_context, monkeypatch)

    assert [state_of(i) in ("stopping", "stopped") for i in ids] == [True, False, True]
    assert header(warning) == "3 GPU machines: 1 kept, 2 stopped"
    assert next(b for b in warning.blocks if kept in json.dumps(b)) == kept_line, "the kept machine's line stays"
    starts = [json.loads(b["accessory"]["options"][0]["value"])["i"] for b in warning.blocks if "accessory" in b]
    assert sorted(starts) == sorted([ids[0], ids[2]]), "each stopped machine's line offers Start it again"
    [reply] = notices(slack.messages, "stop")  # both stops told in one reply
    assert sorted(m.split("-")[3] for m in marked(reply, "stop")) == sorted(i[2:] for i in (ids[0], ids[2]))


def test_a_keep_by_tag_is_said_in_the_warning(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    earlier = now - timedelta(minutes=15)
    iid = idle_machine(earlier)
    sweep(runtime, earlier, lambda_context, monkeypatch)
    [warning] = slack.messages
    until = now + timedelta(days=1)
    ec2().create_tags(Resources=[iid], Tags=[{"Key": tags.KEEP_UNTIL, "Value": until.strftime("%Y-%m-%dT%H:%M:%SZ")}])
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))

    sweep(runtime, now, lambda_context, monkeypatch)

    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    assert header(warning) == "Kept: GPU machine · $136/day"
    assert "(tag `costguard:keep-until`)." in warning.blocks[1]["text"]["text"]
    assert dates_in(warning.blocks[1]) == [int(until.timestamp())]
    assert buttons(warning) == []
    assert len(slack.messages) == 1


def told_of_it(slack: SlackStandIn) -> list[Posted]:
    """The messages about the machine's idling: on a weekday afternoon its owner is also asked, in a message of its
    own, whether anything runs unseen on a machine no agent answers for (tests/integration/test_unseen_offers.py)."""
    return [m for m in slack.messages if "costguard cannot look inside it" not in m.text]


def test_a_warning_withdrawn_because_the_machine_is_at_work_says_so_in_place_not_beside_it(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = midday(now)  # its day: in the evening a machine that cannot answer, its nights not watched, is held
    earlier = now - timedelta(minutes=35)
    iid = idle_machine(earlier)  # no SSM agent yet: warned on its metrics
    monkeypatch.setattr(runtime, "now", lambda: earlier)
    app.lambda_handler(SWEEP, lambda_context, runtime=runtime, policy=POLICY)
    [warning] = told_of_it(slack)
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    answers[iid] = report(sessions=[{"tty": "pts/1", "idle_s": 50}])  # someone typed a minute before the stop

    monkeypatch.setattr(runtime, "now", lambda: now)
    app.lambda_handler(SWEEP, lambda_context, runtime=runtime, policy=POLICY)

    assert state_of(iid) == "running"
    assert len(told_of_it(slack)) == 1, "no second message to contradict the first"
    assert header(warning) == "At work: GPU machine · $136/day"
    said = warning.blocks[1]["text"]["text"]
    assert "Not stopped: at work after all (someone typed in pts/1 50 s ago)." in said
    assert buttons(warning) == []
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName="costguard-state")["Items"]
    [told] = [i for i in items if i["sk"]["S"].startswith(f"cancel#{iid}#")]
    assert (told["status"]["S"], told["ts"]["S"]) == ("delivered", warning.ts), "its delivery: the change in place"


def test_keep_until_tomorrow_is_read_on_the_owners_own_clock(
    aws: None, slack: SlackStandIn, env: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = idle_machine(now)
    sweep(runtime, now, lambda_context, monkeypatch)
    [warning] = slack.messages
    assert "Keep until 09:00 tomorrow (your time)" in json.dumps(warning.blocks)
    runtime.notifier.people._zones["U0ALICE"] = "America/New_York"  # her Slack profile's zone (users.info)

    press(slack, warning, "costguard.keep_tomorrow", runtime, env, now, lambda_context, monkeypatch)

    until = datetime.fromisoformat(tags_of(iid)[tags.KEEP_UNTIL].replace("Z", "+00:00"))
    local = until.astimezone(ZoneInfo("America/New_York"))
    assert (local.hour, local.minute) == (9, 0)
    assert local.date() > now.astimezone(local.tzinfo).date()
    assert dates_in(warning.blocks[1]) == [int(until.timestamp())]
    assert "EST" in as_read(warning.blocks[1]) or "EDT" in as_read(warning.blocks[1])  # the fallback names her zone


def test_an_edit_slack_did_not_take_is_shown_again_by_the_next_sweep_as_the_machine_stands_then(
    aws: None, slack: SlackStandIn, env: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warning says the machine is stopped; its person starts it during a Slack outage, so the edit that
    would say so is refused and nothing changes the message after. The next sweep shows it as it stands."""
    runtime = runtime_for(slack)
    earlier = now - timedelta(minutes=35)
    iid = idle_machine(earlier)
    sweep(runtime, earlier, lambda_context, monkeypatch)
    [warning] = slack.messages
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    sweep(runtime, now, lambda_context, monkeypatch)
    assert header(warning) == "Stopped: GPU machine · saves $136/day"

    slack.fail("chat.update", 503, count=50)  # Slack takes no edit for a while
    event(runtime, iid, "running", now + timedelta(hours=1), lambda_context, monkeypatch)
    assert header(warning) == "Stopped: GPU machine · saves $136/day"  # behind: its edit was refused
    assert buttons(warning) == ["costguard.start", "costguard.why"]
    sweep(runtime, now + timedelta(hours=1, minutes=15), lambda_context, monkeypatch)  # still refused: kept stale
    assert header(warning) == "Stopped: GPU machine · saves $136/day"

    slack.faults.clear()  # Slack is back; nothing happens to the machine
    sweep(runtime, now + timedelta(hours=1, minutes=30), lambda_context, monkeypatch)
    assert header(warning) == "Started again: GPU machine · $136/day"
    assert buttons(warning) == []
    edits = len([m for m, _ in slack.said if m == "chat.update"])
    sweep(runtime, now + timedelta(hours=1, minutes=45), lambda_context, monkeypatch)
    # A mark first found at the sweep before is shown once more (it might have been a change on its way), cleared.
    assert len([m for m, _ in slack.said if m == "chat.update"]) == edits + 1
    assert header(warning) == "Started again: GPU machine · $136/day"
    sweep(runtime, now + timedelta(hours=2), lambda_context, monkeypatch)
    assert len([m for m, _ in slack.said if m == "chat.update"]) == edits + 1  # no longer stale
