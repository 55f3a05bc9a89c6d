"""Killed at every point where it writes, each function loses nothing and repeats at most one message.

The points are found by running each scenario once with the kill switch counting (testing/killpoints.py:
every AWS call that writes, every Slack post or edit), not listed by hand. Then, for each point, the
scenario runs again in a fresh world, killed there (as a Lambda timeout ends an invocation: nothing of
the dead invocation reaches AWS or Slack afterwards), and the platform does what it does: Lambda's two
asynchronous retries (1 and then 2 minutes later, each only if the attempt before failed) or SQS's
redeliveries, then the next scheduled run. Then every effect is checked against its record:

- no wrong stop (a busy machine, a machine never warned, a stop without a delivered warning);
- nothing lost: every stop has its `costguard:stopped-at`, one ledger entry and its notice; every
  warning its tags, one ledger entry (at the warning's time) and its message; every keep its tags and
  entry; every alert, reminder, digest part and owner tag its message or record;
- at most one duplicate Slack message for the kill (a message whose notice was already posted);
- no duplicate ledger entry.

Killed "before" point k leaves AWS and Slack as "after" point k-1 does (only reads and local work lie
between), so a scenario with N points runs N + 1 times: before the first, and after each.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costguard.aws.clients import ClientFactory, new_session
from costguard.core import tags
from costguard.core.formatting import format_time
from costguard.core.settings import Mode, Settings
from costguard.runtime import Runtime
from costguard.slack.blocks import Message, actions, section
from costguard.slack.buttons import Button, laid_out, warning_buttons
from costguard.slack.interactions import Click
from testing import moto_fixes
from testing.handlers import LambdaContext, load_event, load_handler
from testing.killpoints import Killed, KillSwitch
from testing.slack_standin import SlackStandIn
from tests.faults.conftest import switch
from tests.integration.conftest import REGION, TABLE, ec2, make_runtime, tags_of
from tests.integration.test_idle_stopper import idle, launch, publish, warn_tags
from tests.integration.test_weekly_digest import launch as launch_for_digest
from tests.integration.test_weekly_digest import publish_hours

__all__ = ["switch"]
# Each point replays whole sweeps: moto's own GetMetricData, which rescans every datapoint for every query,
# was two thirds of the time. Kills are about writes; the answers are the same (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("indexed_metrics")
SECONDS = 60
LAMBDA_RETRIES = (timedelta(minutes=1), timedelta(minutes=3))  # an async invocation's two retries
SQS_REDELIVERIES = (timedelta(minutes=3), timedelta(minutes=6), timedelta(minutes=9))  # the visibility timeout


def handler(name: str) -> Any:
    return load_handler(name).lambda_handler


# ---------------------------------------------------------------------- what a run left behind
def items() -> list[dict[str, Any]]:
    return list(boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"])


def entries(kind: str) -> list[dict[str, Any]]:
    return [i for i in items() if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == kind]


def state(iid: str) -> str:
    return str(ec2().describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"])


NOTICES = ("cg-warn-", "cg-stop-", "cg-cancel-", "cg-claim-")  # the block ids that mark one notice


def markers(message: Any) -> set[str]:
    return {b.get("block_id", "") for b in message.blocks if str(b.get("block_id", "")).startswith(NOTICES)}


def duplicate_messages(slack: SlackStandIn) -> list[str]:
    """Messages that told again what an earlier message told (by the notices' block ids), files uploaded
    again, and ephemeral answers to a click that was done already."""
    seen: set[str] = set()
    again = []
    for message in slack.messages:
        told = markers(message) or {message.text}
        if told & seen:
            again.append(message.text[:80])
        seen |= told
    uploaded = Counter(f.get("filename", "") for f in slack.files)
    again += [f"{name} uploaded again" for name, n in uploaded.items() for _ in range(n - 1)]
    return again + [str(e.get("text", ""))[:80] for e in slack.ephemeral]


def told_about(slack: SlackStandIn, kind: str, iid: str) -> int:
    """Messages that told this machine's notice: by its block id (or, unmarked, by its words)."""
    words = {"warn": ("has done no work",), "stop": ("Stopped:", "Hibernated:")}[kind]
    return sum(
        1
        for m in slack.messages
        if any(b.startswith(f"cg-{kind}-{iid}-") for b in markers(m))
        or (not markers(m) and iid in m.text and any(w in m.text for w in words))
    )


# ---------------------------------------------------------------------- the harness
@dataclass
class Scenario:
    """One function's work, set up in a fresh world, invoked at `start`, checked at the end."""

    name: str
    setup: Callable[[SlackStandIn], dict[str, Any]]  # the world; what check needs to know
    invoke: Callable[[Runtime, datetime, dict[str, Any]], Any]
    check: Callable[[SlackStandIn, dict[str, Any]], list[str]]  # what is wrong
    start: datetime
    retries: tuple[timedelta, ...] = LAMBDA_RETRIES
    next_run: timedelta | None = None
    runs: int = field(default=0)


@contextmanager
def world(slack: SlackStandIn) -> Iterator[Runtime]:
    for recorded in (slack.messages, slack.calls, slack.ephemeral, slack.files):
        recorded.clear()
    slack.faults.clear()
    with mock_aws():
        make_runtime(slack)  # the state table and the Slack secret
        yield fresh_runtime(slack)


@cache
def clients() -> ClientFactory:
    """The AWS clients every container of these runs uses: a real container makes its own at its cold
    start; here that would be most of the suite's time (40 ms a client), and a client holds no state."""
    return ClientFactory(new_session(), default_region=REGION)


@pytest.fixture(autouse=True)
def _clients_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' own helpers (tags_of, launch, publish) ask boto3 for a client at each call: made once."""
    made = cache(boto3.client)
    monkeypatch.setattr(boto3, "client", lambda service, region_name=None, **kw: made(service, region_name, **kw))


def fresh_runtime(slack: SlackStandIn) -> Runtime:
    """A new Lambda container (a retry after a kill starts in one): no cached clients or Slack ids."""
    settings = Settings(
        mode=Mode.ENFORCE,
        slack_secret_name="costguard/slack",
        alerts_channel="C0ALERTS",
        digest_channel="C0DIGEST",
        owner_tag_key="Owner",
        email_domain="example.com",
        governed_regions=(REGION,),
        state_table=TABLE,
        state_ttl_days=400,
        slack_api_url=slack.api_url,
        home_region=REGION,
    )
    return Runtime(settings, clients(), slack_pace=0.0)


def attempt(scenario: Scenario, slack: SlackStandIn, at: datetime, context: dict[str, Any]) -> bool:
    """One invocation in a new container; True if it failed (the platform tries again)."""
    scenario.runs += 1
    try:
        scenario.invoke(fresh_runtime(slack), at, context)
    except (Exception, Killed):
        return True
    return False


def count_points(scenario: Scenario, switch: KillSwitch, slack: SlackStandIn) -> list[str]:
    with world(slack):
        context = scenario.setup(slack)
        with switch.invocation():
            scenario.invoke(fresh_runtime(slack), scenario.start, context)
            points = list(switch.passed)
        problems = scenario.check(slack, context)
    assert not problems, f"{scenario.name} is wrong even without a kill: {problems}"
    return points


def killed_at(scenario: Scenario, switch: KillSwitch, slack: SlackStandIn, point: int, *, after: bool) -> list[str]:
    """The scenario killed at one point, retried and run again as the platform would; what is wrong."""
    with world(slack):
        context = scenario.setup(slack)
        switch.arm(point, after=after)
        with switch.invocation():
            failed = attempt(scenario, slack, scenario.start, context)
            where = switch.killed_at
        for delay in scenario.retries:
            if not failed:
                break
            failed = attempt(scenario, slack, scenario.start + delay, context)
        if scenario.next_run is not None:
            attempt(scenario, slack, scenario.start + scenario.next_run, context)
        problems = scenario.check(slack, context)
        again = duplicate_messages(slack)
        if len(again) > 1:
            problems.append(f"{len(again)} duplicate messages for one kill: {again}")
        return [f"killed {where or 'nowhere'}: {p}" for p in problems]


def every_point(scenario: Scenario, switch: KillSwitch, slack: SlackStandIn) -> list[str]:
    points = count_points(scenario, switch, slack)
    assert points, f"{scenario.name} writes nothing"
    problems = killed_at(scenario, switch, slack, 1, after=False)
    for point in range(1, len(points) + 1):
        problems += killed_at(scenario, switch, slack, point, after=True)
    print(f"{scenario.name}: {len(points)} points ({', '.join(points)}), {scenario.runs} invocations")
    return problems


# ---------------------------------------------------------------------- the idle sweep
SWEEP_START = datetime.now(UTC).replace(second=0, microsecond=0)
SWEEP_NOW = SWEEP_START - timedelta(minutes=SWEEP_START.minute % 5)


def sweep_world(slack: SlackStandIn) -> dict[str, Any]:
    """Two idle machines of alice's to warn (one message), one of bob's and one of dan's (not in Slack:
    one roll-up in the alerts channel), two warned an hour ago to stop (carol's, and one whose owner is
    unknown), one warned but back at work."""
    now = SWEEP_NOW
    fresh = [launch(now), launch(now), launch(now, owner="dan@example.com")]
    lonely = launch(now, owner="bob@example.com")
    due = [
        launch(now, owner="carol@example.com", tags=warn_tags(now, 80)),
        launch(now, owner="", tags=warn_tags(now, 80)),
    ]
    busy = launch(now, tags=warn_tags(now, 30))
    for iid in [*fresh, lonely, *due]:
        publish(iid, now, gpus=[idle(), idle()])
    publish(busy, now, gpus=[[85.0] * 36, idle()])
    return {"fresh": fresh, "lonely": lonely, "due": due, "busy": busy}


def sweep_once(runtime: Runtime, at: datetime, _: dict[str, Any]) -> Any:
    runtime.now = lambda: at  # type: ignore[method-assign]
    return handler("idle_stopper")({"costguard": "sweep"}, LambdaContext(), runtime=runtime)


def sweep_check(slack: SlackStandIn, w: dict[str, Any]) -> list[str]:
    problems = []
    warned = [*w["fresh"], w["lonely"]]
    stops = Counter(e["instance_id"]["S"] for e in entries("stop"))
    warns = {e["instance_id"]["S"]: e for e in entries("warn")}
    for iid in [*warned, w["busy"]]:
        if state(iid) != "running":
            problems.append(f"wrong stop of {iid}")
    for iid in w["due"]:
        if state(iid) not in ("stopping", "stopped"):
            problems.append(f"{iid} not stopped")
        if stops[iid] != 1:
            problems.append(f"{iid} has {stops[iid]} stop entries")
        at = tags_of(iid).get(tags.STOPPED_AT)
        stopped = [e for e in entries("stop") if e["instance_id"]["S"] == iid]
        if at is None or (stopped and not stopped[0]["at"]["S"].startswith(at.rstrip("Z"))):
            problems.append(f"{iid}: stopped-at {at} is not its stop entry's time")
        if told_about(slack, "stop", iid) < 1:
            problems.append(f"{iid}'s stop never told")
    for iid in warned:
        at = tags_of(iid).get(tags.IDLE_WARNED_AT)
        if at is None:
            problems.append(f"{iid} has no warning tags")
        if iid not in warns or (at and not warns[iid]["at"]["S"].startswith(at.rstrip("Z"))):
            problems.append(f"{iid}'s warning not in the ledger at its time")
        if told_about(slack, "warn", iid) < 1:
            problems.append(f"{iid} never warned")
    if len([e for e in entries("warn") if e["instance_id"]["S"] in warned]) != len(warned):
        problems.append(f"duplicate warn entries: {Counter(e['instance_id']['S'] for e in entries('warn'))}")
    if tags.IDLE_WARNED_AT in tags_of(w["busy"]):
        problems.append("the warning of the machine back at work is still there")
    if len([e for e in entries("clear-warning") if e["instance_id"]["S"] == w["busy"]]) != 1:
        problems.append("the withdrawn warning is not recorded once")
    left = [i["sk"]["S"] for i in items() if i["pk"]["S"].startswith("outbox#") and i["sk"]["S"].startswith("stop#")]
    if left:
        problems.append(f"stop notices still in the outbox: {left}")
    return problems


def test_the_sweep_killed_at_every_point_loses_nothing_and_repeats_at_most_one_message(
    slack: SlackStandIn, switch: KillSwitch
) -> None:
    scenario = Scenario(
        "idle sweep",
        sweep_world,
        sweep_once,
        sweep_check,
        start=SWEEP_NOW - timedelta(minutes=20),
        next_run=timedelta(minutes=15),
    )
    problems = every_point(scenario, switch, slack)
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------------- the buttons worker
CLICKED = datetime(2026, 11, 21, 14, 8, 20, tzinfo=UTC)


def click_world(button: Button) -> Callable[[SlackStandIn], dict[str, Any]]:
    def setup(slack: SlackStandIn) -> dict[str, Any]:
        iid = str(
            ec2().run_instances(
                ImageId="ami-12c6146b",
                MinCount=1,
                MaxCount=1,
                InstanceType="g5.12xlarge",
                TagSpecifications=[
                    {
                        "ResourceType": "instance",
                        "Tags": [
                            {"Key": "Owner", "Value": "alice@example.com"},
                            {"Key": tags.IDLE_WARNED_AT, "Value": "2026-11-21T14:00:00Z"},
                            {"Key": tags.STOP_AFTER, "Value": "2026-11-21T14:30:00Z"},
                        ],
                    }
                ],
            )["Instances"][0]["InstanceId"]
        )
        warning = Message(
            "idle",
            (section(f"`{iid}` is idle"), actions(f"costguard:{iid}", laid_out(warning_buttons(iid, REGION, True)))),
        )
        runtime = fresh_runtime(slack)
        ts = runtime.notifier.post("U0ALICE", warning).ts
        slack.calls.clear()
        click = Click(
            button=button,
            instance_id=iid,
            region=REGION,
            user_id="U0ALICE",
            user_name="alice",
            response_url=slack.response_url(ts),
            message_ts=ts,
            action_ts=f"{CLICKED.timestamp():.6f}",
            blocks=tuple(warning.slack_blocks()),
        )
        return {"iid": iid, "click": click, "button": button}

    return setup


def click_once(runtime: Runtime, at: datetime, w: dict[str, Any]) -> Any:
    runtime.now = lambda: at  # type: ignore[method-assign]
    return handler("buttons")({"Records": [{"body": w["click"].to_json()}]}, LambdaContext(), runtime=runtime)


def click_check(slack: SlackStandIn, w: dict[str, Any]) -> list[str]:
    problems = []
    iid, keep = w["iid"], w["button"] is Button.KEEP_2H
    found = tags_of(iid)
    kind = "keep" if keep else "stop-from-slack"
    if len(entries(kind)) != 1:
        problems.append(f"{len(entries(kind))} {kind} entries")
    if keep and (tags.KEEP_UNTIL not in found or tags.IDLE_WARNED_AT in found):
        problems.append(f"the keep is not on the machine: {found}")
    if not keep and (state(iid) not in ("stopping", "stopped") or tags.STOPPED_AT not in found):
        problems.append("the stop from Slack is not on the machine")
    [warning] = slack.messages
    if not warning.updated or "actions" in json.dumps([b.get("type") for b in warning.blocks]):
        problems.append("the message does not show what was done")
    return problems


@pytest.mark.parametrize("button", [Button.KEEP_2H, Button.STOP_NOW])
def test_the_buttons_worker_killed_at_every_point_keeps_every_click(
    slack: SlackStandIn, switch: KillSwitch, button: Button, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLICK_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/costguard-clicks")
    monkeypatch.setenv("TEAM_TIMEZONE", "Europe/Paris")
    load_handler("buttons")._settings.cache_clear()
    scenario = Scenario(
        f"buttons ({button.value})",
        click_world(button),
        click_once,
        click_check,
        start=CLICKED + timedelta(seconds=2),
        retries=SQS_REDELIVERIES,
    )
    problems = every_point(scenario, switch, slack)
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------------- budget alerts
def budget_once(runtime: Runtime, at: datetime, _: dict[str, Any]) -> Any:
    runtime.now = lambda: at  # type: ignore[method-assign]
    return handler("budget_alerts")(load_event("budget_alerts/sns-actual-75.json"), LambdaContext(), runtime=runtime)


def one_message(slack: SlackStandIn, _: dict[str, Any]) -> list[str]:
    return [] if slack.messages else ["the alert was never posted"]


def test_budget_alerts_killed_at_every_point_post_the_alert_once(slack: SlackStandIn, switch: KillSwitch) -> None:
    scenario = Scenario(
        "budget alerts",
        lambda _: {},
        budget_once,
        one_message,
        start=datetime(2026, 11, 21, 9, 13, tzinfo=UTC),
    )
    problems = every_point(scenario, switch, slack)
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------------- commitment tracker
def commitments_once(runtime: Runtime, at: datetime, _: dict[str, Any]) -> Any:
    from tests.integration.test_commitment_tracker import stub_world  # noqa: PLC0415

    runtime.now = lambda: at  # type: ignore[method-assign]
    with ExitStack() as stack:
        stub_world(stack, runtime)
        return handler("commitment_tracker")(
            load_event("commitment_tracker/daily.json"), LambdaContext(), runtime=runtime
        )


def both_commitment_messages(slack: SlackStandIn, _: dict[str, Any]) -> list[str]:
    texts = {m.text for m in slack.messages}
    wanted = {"8 × p4d.24xlarge Reserved Instances expire in 30 days", "Compute Savings Plan ($12.50/h) only 61% used"}
    return [f"never posted: {w}" for w in wanted if not any(t.startswith(w) for t in texts)]


def test_the_commitment_tracker_killed_at_every_point_reminds_once(slack: SlackStandIn, switch: KillSwitch) -> None:
    scenario = Scenario(
        "commitment tracker",
        lambda _: {},
        commitments_once,
        both_commitment_messages,
        start=datetime(2026, 11, 21, 8, 0, tzinfo=UTC),
        next_run=timedelta(days=1),
    )
    problems = every_point(scenario, switch, slack)
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------------- weekly digest
DIGEST_NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


def digest_world(slack: SlackStandIn) -> dict[str, Any]:
    parents: dict[str, str] = {}  # a post's ts -> its thread's: the stand-in keeps no threads
    record = SlackStandIn._record.__get__(slack)  # the stand-in's own, whatever an earlier run put over it

    def recording(route: str, channel: str, payload: Any, *, direct: bool = False) -> Any:
        posted = record(route, channel, payload, direct=direct)
        if payload.get("thread_ts"):
            parents[posted.ts] = str(payload["thread_ts"])
        return posted

    slack._record = recording  # type: ignore[method-assign]
    iid = launch_for_digest("g5.xlarge", "alice@example.com", "nlp", DIGEST_NOW)
    publish_hours(iid, 1, DIGEST_NOW - timedelta(days=1), 12, cpu=2, gpu=1)  # $12.07 idle: alice gets her week
    return {"parents": parents}


def digest_once(runtime: Runtime, at: datetime, _: dict[str, Any]) -> Any:
    runtime.now = lambda: at  # type: ignore[method-assign]
    return handler("weekly_digest")(load_event("weekly_digest/weekly.json"), LambdaContext(), runtime=runtime)


def digest_check(slack: SlackStandIn, w: dict[str, Any]) -> list[str]:
    problems = []
    channel = [m for m in slack.messages if m.channel == "C0DIGEST"]
    posts = [m for m in channel if m.ts not in w["parents"]]
    if not posts:
        problems.append("the channel's digest never posted")
    if len(posts) > 1:  # its history is readable here: a retry finds the post that went out, and goes on under it
        problems.append(f"the channel's post went out {len(posts)} times")
    replies = [m for m in channel if m.ts in w["parents"]]
    for reply in ("GPU week: idle cost by owner", "GPU week: what costguard did, hygiene, commitments and spend"):
        if reply not in {m.text for m in replies}:
            problems.append(f"the thread's reply {reply!r} never posted")
    if posts and any(w["parents"][m.ts] != posts[0].ts for m in replies):
        problems.append("a reply went to another thread than the post's")
    if "U0ALICE" not in {m.channel for m in slack.messages}:
        problems.append("alice's week never sent")
    if not slack.files:
        problems.append("the chart never uploaded")  # twice counts as the kill's one duplicate
    return problems


def test_the_weekly_digest_killed_at_every_point_sends_each_part_once(slack: SlackStandIn, switch: KillSwitch) -> None:
    scenario = Scenario("weekly digest", digest_world, digest_once, digest_check, start=DIGEST_NOW)
    problems = every_point(scenario, switch, slack)
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------------- owner tagger
def tagger_world(_: SlackStandIn) -> dict[str, Any]:
    from tests.integration.test_owner_tagger import event_for  # noqa: PLC0415
    from tests.integration.test_owner_tagger import launch as launch_untagged  # noqa: PLC0415

    iid = launch_untagged()
    return {"iid": iid, "event": event_for("runinstances-iam-user.json", iid)}


def tagger_once(runtime: Runtime, at: datetime, w: dict[str, Any]) -> Any:
    runtime.now = lambda: at  # type: ignore[method-assign]
    event = w["event"] if at - w.setdefault("first", at) < timedelta(hours=1) else {"costguard": "backfill"}
    return handler("owner_tagger")(event, LambdaContext(), runtime=runtime)


def tagger_check(_: SlackStandIn, w: dict[str, Any]) -> list[str]:
    problems = []
    if tags_of(w["iid"]).get("Owner") != "alice":
        problems.append(f"the owner tag is missing: {tags_of(w['iid'])}")
    recorded = [e for e in entries("owner-tagged") if e["instance_id"]["S"] == w["iid"]]
    if len(recorded) != 1:
        problems.append(f"{len(recorded)} ledger records of the tagging")
    return problems


def test_the_owner_tagger_killed_at_every_point_tags_and_records_once(slack: SlackStandIn, switch: KillSwitch) -> None:
    scenario = Scenario(
        "owner tagger",
        tagger_world,
        tagger_once,
        tagger_check,
        start=datetime.now(UTC),
        next_run=timedelta(days=1),  # the daily backfill
    )
    problems = every_point(scenario, switch, slack)
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------------- starts and scale-in protection
# Effects nobody is told about: a stop that promises a learned start (its start-at tag and start-log record
# before StopInstances), the learned start itself, a working-hours start, a change of scale-in protection.
# Each is recorded once, keyed by the effect: a kill between the call and its record loses neither the
# record nor makes the call again. moto gives a started machine the wall clock's launch time, so the
# scenarios run at the wall clock's time: the learned start is due now.
LEAD = timedelta(minutes=15)  # IdlePolicy's schedule lead
_NOW = datetime.now(UTC).replace(second=0, microsecond=0)  # read once: two reads may straddle a minute
START_AT = _NOW - timedelta(minutes=_NOW.minute % 15)
NIGHTLY_RUN = START_AT + LEAD - timedelta(days=1)  # yesterday's run of the nightly job
STOP_AT = NIGHTLY_RUN + timedelta(minutes=210)  # the sweep that stops the box between its runs


CLOCK = [START_AT]  # the time of the invocation running


@pytest.fixture
def started_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """StartInstances gives the machine the invocation's time as its launch time, as AWS does (moto keeps
    the first launch's): what proves a start made by an attempt that died."""
    from moto.ec2.models.instances import Instance as MotoInstance  # noqa: PLC0415

    monkeypatch.setattr(MotoInstance, "start", MotoInstance.start)  # put back after the test
    monkeypatch.setattr(MotoInstance, "_costguard_original_start", MotoInstance.start, raising=False)
    moto_fixes.launch_time_at_start(lambda: CLOCK[0])


def sweep_on_clock(runtime: Runtime, at: datetime, w: dict[str, Any]) -> Any:
    CLOCK[0] = at
    return sweep_once(runtime, at, w)


def nightly_world(switch: KillSwitch) -> Callable[[SlackStandIn], dict[str, Any]]:
    def setup(_: SlackStandIn) -> dict[str, Any]:
        from tests.integration.test_learned_starts import nightly_history  # noqa: PLC0415

        box = launch(STOP_AT, instance_type="g5.xlarge", hours=24 * 20, tags=warn_tags(STOP_AT, 30))
        nightly_history(box, NIGHTLY_RUN)
        publish(box, STOP_AT + timedelta(minutes=20), gpus=[[1.0] * 34])  # idle since its run, till the next sweep
        switch.applied.clear()
        return {"box": box}

    return setup


def nightly_stop_check(switch: KillSwitch) -> Callable[[SlackStandIn, dict[str, Any]], list[str]]:
    def check(slack: SlackStandIn, w: dict[str, Any]) -> list[str]:
        box, problems = w["box"], []
        if state(box) not in ("stopping", "stopped"):
            problems.append("the box was not stopped")
        if tags_of(box).get(tags.START_AT) != format_time(START_AT):
            problems.append(f"the stop's promise is not on the box: {tags_of(box).get(tags.START_AT)}")
        kept = start_log(box)
        if kept.get("stopped_at") != tags_of(box).get(tags.STOPPED_AT) or kept.get("gpus") != 1:
            problems.append(f"the stop is not in the start log: {kept}, {tags_of(box).get(tags.STOPPED_AT)}")
        if format_time(START_AT) not in kept.get("promised", []):
            problems.append(f"the start time is not among those promised: {kept}")
        if len(entries("stop")) != 1 or told_about(slack, "stop", box) < 1:
            problems.append(f"{len(entries('stop'))} stop entries, told {told_about(slack, 'stop', box)} times")
        return problems

    return check


def start_log(iid: str) -> dict[str, Any]:
    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=TABLE, Key={"pk": {"S": f"learned#{iid}"}, "sk": {"S": "learned"}}
    )
    return dict(json.loads(item["Item"]["record"]["S"])) if "Item" in item else {}


@pytest.mark.usefixtures("started_now")
def test_a_stop_before_a_learned_start_killed_at_every_point_keeps_its_promise(
    slack: SlackStandIn, switch: KillSwitch
) -> None:
    scenario = Scenario(
        "stop before a learned start",
        nightly_world(switch),
        sweep_on_clock,
        nightly_stop_check(switch),
        start=STOP_AT,
        next_run=timedelta(minutes=15),
    )
    problems = every_point(scenario, switch, slack)
    assert problems == [], "\n".join(problems)


def starts_world(switch: KillSwitch) -> Callable[[SlackStandIn], dict[str, Any]]:
    """The nightly box stopped (by a sweep nobody kills) with its start due now; a machine whose working
    hours open in 10 minutes, stopped; a busy Auto Scaling member to protect from scale-in."""

    def setup(slack: SlackStandIn) -> dict[str, Any]:
        from tests.integration.conftest import gpu_group  # noqa: PLC0415

        world_ = nightly_world(switch)(slack)
        sweep_on_clock(fresh_runtime(slack), STOP_AT, world_)
        assert tags_of(world_["box"]).get(tags.START_AT) == format_time(START_AT), "the box was not stopped"
        opens = START_AT + timedelta(minutes=10)
        hours = launch(START_AT, tags={tags.SCHEDULE: f"daily {opens:%H:%M}-{opens + timedelta(hours=8):%H:%M} UTC"})
        ec2().stop_instances(InstanceIds=[hours])
        [member] = gpu_group("inference", 1)
        moto_fixes.set_launch_time(member, REGION, START_AT - timedelta(hours=5))
        publish(member, START_AT + timedelta(minutes=20), gpus=[[80.0] * 40], cpu=[40.0] * 40)
        slack.messages.clear()
        switch.applied.clear()
        return {**world_, "hours": hours, "member": member}

    return setup


def starts_check(switch: KillSwitch) -> Callable[[SlackStandIn, dict[str, Any]], list[str]]:
    def check(_: SlackStandIn, w: dict[str, Any]) -> list[str]:
        problems = []
        started = Counter(
            iid for where, params in switch.applied if where == "ec2:StartInstances" for iid in params["InstanceIds"]
        )
        for name, kind in (("box", "learned-start"), ("hours", "morning-start")):
            iid = w[name]
            if state(iid) not in ("pending", "running"):
                problems.append(f"the {name} machine was not started")
            if started[iid] != 1:
                problems.append(f"the {name} machine was started {started[iid]} times")
            if len([e for e in entries(kind) if e["instance_id"]["S"] == iid]) != 1:
                problems.append(f"{len(entries(kind))} {kind} entries")
        if tags.START_AT in tags_of(w["box"]):
            problems.append("the box still waits for its start")
        made = start_log(w["box"]).get("starts", [])
        if [s["e"] for s in made] != [format_time(START_AT + LEAD)]:
            problems.append(f"the start log's starts: {made}")
        members = boto3.client("autoscaling", region_name=REGION).describe_auto_scaling_groups()
        if not members["AutoScalingGroups"][0]["Instances"][0]["ProtectedFromScaleIn"]:
            problems.append("the busy member is not protected")
        if len(entries("protect")) != 1:
            problems.append(f"{len(entries('protect'))} protect entries")
        left = [i["sk"]["S"] for i in items() if i["pk"]["S"].startswith("outbox#")]
        if [sk for sk in left if sk.split("#")[0] in ("start", "protect", "unprotect")]:
            problems.append(f"effects still in the outbox: {left}")
        return problems

    return check


@pytest.mark.usefixtures("started_now")
def test_starts_and_scale_in_protection_killed_at_every_point_are_made_and_recorded_once(
    slack: SlackStandIn, switch: KillSwitch
) -> None:
    scenario = Scenario(
        "starts and protection",
        starts_world(switch),
        sweep_on_clock,
        starts_check(switch),
        start=START_AT,
        next_run=timedelta(minutes=15),
    )
    problems = every_point(scenario, switch, slack)
    assert problems == [], "\n".join(problems)
