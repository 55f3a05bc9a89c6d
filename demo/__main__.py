"""`make demo`: costguard's governance cycle against a local emulated AWS account and Slack.

Starts moto's server on 127.0.0.1 behind the gap proxy (testing/aws_gaps.py) and the Slack stand-in,
seeds the fleet (demo/fleet.py), runs the idle stopper over the evenings of the five days before the story
(demo/week.py: the week the weekly digest reads), then runs each function's handler in-process on the payloads in
events/, with the real boto3 and slack-sdk clients, on a demo clock pinned to one Monday morning
(demo/clock.py) that lets an hour pass. It prints what happened, checks that every scene happened as
told (demo/story.py), and writes demo-output/index.html: every Slack message as Slack shows it, then the
story, folded.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import gc
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import boto3
import botocore.loaders
import botocore.session

from costguard.aws.clients import ClientFactory, new_session
from costguard.core.formatting import plural
from costguard.core.observability import logger
from costguard.core.settings import Mode, Settings
from costguard.runtime import Runtime
from costguard.slack.signature import sign
from costguard.state.weeks import WeekRecords
from demo import accounts, anomaly, fleet, grouped, learned, render, sagemaker, week
from demo.clock import PRESENT, TEAM_ZONE, DemoClock
from demo.story import SceneLog
from testing.account import LocalAccount
from testing.handlers import LambdaContext, load_handler

OUT = Path("demo-output")
HUB = "123456789012"  # moto's default account: this one
ALERTS = "#ml-costs"
DIGEST = "#ml-weekly"
USERS = {
    f"{name}@example.com": f"U0{name.upper()}"
    for name in (
        "alice",
        "bob",
        "carol",
        "dave",
        "erin",
        "frank",
        "grace",
        "henry",
        "ivy",
        "kim",
        "leo",
        "nina",
        "omar",
        "pat",
        "platform",
    )
}


def event(path: str, **changes: Any) -> Any:
    """events/<path>, with `detail` fields replaced where given."""
    body = json.loads((fleet.EVENTS / path).read_text())
    for key, value in changes.items():
        body["detail"][key] = value
    return body


class Demo:
    def __init__(self) -> None:
        OUT.mkdir(exist_ok=True)
        self.account = LocalAccount(USERS)
        self.slack = self.account.slack
        # One set of botocore's service models for the demo's clients and each account's costguard: each
        # session would load its own (a second and more of JSON for EC2's and SageMaker's).
        self.models = botocore.loaders.create_loader()
        self.session = boto3.session.Session(botocore_session=self.botocore_session())
        self._clients: dict[tuple[str, str], Any] = {}
        self.account.activate(
            ALERTS_CHANNEL=ALERTS,
            DIGEST_CHANNEL=DIGEST,
            GOVERNED_REGIONS=f"{fleet.HOME},{fleet.OTHER}",
            SLACK_ADMINS="U0PLATFORM",
            TEAM_TIMEZONE=TEAM_ZONE,
            ACTIVITY_CHECK_DOCUMENT="costguard-ActivityCheckDocument",
            ACTIVITY_CHECK_SECONDS="10",
        )
        self.queue = str(self.client("sqs").create_queue(QueueName="costguard-clicks")["QueueUrl"])
        # The hub of an organization of two accounts (and a third that never reports): see demo/accounts.py.
        figures = self.client("sqs").create_queue(QueueName="costguard-figures")["QueueUrl"]
        self.account.set_env(
            CLICK_QUEUE_URL=self.queue,
            MEMBER_CLICK_QUEUES=f"arn:aws:sqs:{accounts.REGION}:{accounts.MEMBER}:costguard-clicks",
            FIGURES_QUEUE_URL=figures,
            MEMBER_DIGEST_ROLES=f"{accounts.DIGEST_ROLE},{accounts.SILENT_ROLE}",
            HANDOFF_QUEUE_ARN=f"arn:aws:sqs:{fleet.HOME}:{HUB}:costguard-figures",
            ACCOUNT_LABEL="research",
        )
        self.log = (OUT / "lambda-logs.jsonl").open("w")
        self.log_seen = 0
        handler = logger.registered_handler
        if hasattr(handler, "setStream"):
            handler.setStream(self.log)  # Lambda's stdout goes to a file; the terminal keeps the story
        self.t0 = PRESENT  # the fleet's metrics run up to here; never the wall clock (demo/clock.py)
        # The handlers read the time and wait on the demo's clock: it moves forward instead of an hour
        # passing, and their waits (activity checks, Slack's pace) cost it seconds, not the wall clock.
        self.time = DemoClock(self.t0)
        self.time.install()
        self.slack.clock = self.time.timestamp  # a message's ts is the story's moment, as in Slack
        self.invocations: list[tuple[str, str, str, float]] = []
        self.timeline: list[list[str]] = []
        self.scenes = SceneLog()
        self.names: dict[str, str] = {}  # instance id -> name, for the machines outside fleet.FLEET
        self.learned_starts: set[str] = set()  # "<name> started", by the sweeps that started them

    def botocore_session(self) -> botocore.session.Session:
        """A botocore session that shares the demo's service models."""
        session = botocore.session.get_session()
        session.register_component("data_loader", self.models)
        return session

    def client(self, service: str, region: str = fleet.HOME) -> Any:
        """The operator's client of this account (one per service and region: the demo makes many calls)."""
        key = (service, region)
        if key not in self._clients:
            self._clients[key] = self.session.client(  # type: ignore[call-overload]
                service, region_name=region, endpoint_url=self.account.proxy.url
            )
        return self._clients[key]

    def runtime(self) -> Runtime:
        """The hub's costguard, as Lambda builds it at the first invocation (`Runtime.current()`), from the
        Lambda environment as it is now; its clients share the demo's service models."""
        if Runtime._current is None:
            session = new_session()
            session._session.register_component("data_loader", self.models)
            settings = Settings.from_env()
            clients = ClientFactory(session, default_region=settings.governed_regions[0])
            Runtime._current = Runtime(settings, clients)
        return Runtime._current

    @property
    def clock(self) -> datetime:
        """The demo's time, which a scene sets or moves forward."""
        return self.time.at

    @clock.setter
    def clock(self, value: datetime) -> None:
        self.time.at = value

    def invoke(
        self,
        function: str,
        payload: Any,
        label: str,
        member: accounts.Member | None = None,
        runtime: Runtime | None = None,
    ) -> Any:
        """The function's handler on `payload`, in the hub (this account) or in the member account; `runtime`:
        the hub's, deployed otherwise (the first deploy's dry-run)."""
        handler = load_handler(function).lambda_handler
        started = time.perf_counter()
        with contextlib.redirect_stdout(self.log):
            if member is not None:
                result = handler(payload, accounts.MemberContext(), runtime=member.runtime)
            elif runtime is not None:
                result = handler(payload, LambdaContext(), runtime=runtime)
            else:
                result = handler(payload, LambdaContext())
        where = f" ({accounts.MEMBER})" if member else ""
        self.invocations.append((f"{self.clock:%H:%M}", function + where, label, time.perf_counter() - started))
        return result

    def close(self) -> None:
        self.account.close()
        self.log.close()


@contextlib.contextmanager
def step(title: str) -> Iterator[None]:
    print(f"\n== {title}")
    started = time.perf_counter()
    yield
    print(f"   ({time.perf_counter() - started:.1f} s)")


# Whom each launch event of events/owner_tagger/ names, as costguard finds it.
LAUNCH_SOURCES = {
    "runinstances-iam-user.json": "iam-user",
    "runinstances-assumed-role.json": "assumed-role",
    "runinstances-identity-center.json": "identity-center",
    "runinstances-root.json": "root",
    "runinstances-launch-tagged.json": "launch-tag",
    "runinstances-autoscaling.json": "group-tag",
}


def owner_tagging(demo: Demo, seeded: fleet.SeededFleet) -> None:
    title = "owner_tagger: real-time RunInstances events (events/owner_tagger/*.json)"
    expected, got = {}, {}
    with step(title):
        for machine in seeded.machines:
            if machine.launch_event:
                result = demo.invoke("owner_tagger", fleet.launch_event(machine), machine.launch_event)
                print(f"   {machine.name:<20} {machine.launch_event:<36} → {result['by_source']}")
                expected[machine.name] = {LAUNCH_SOURCES[machine.launch_event]: 1}
                got[machine.name] = result["by_source"]
        for index, instance_id in enumerate(seeded.asg_instances):
            member = fleet.Machine(
                "asg", fleet.HOME, "g5.2xlarge", "", "runinstances-autoscaling.json", instance_id=instance_id
            )
            result = demo.invoke("owner_tagger", fleet.launch_event(member), "runinstances-autoscaling.json")
            print(f"   {fleet.ASG_NAME + ' member':<20} {'runinstances-autoscaling.json':<36} → {result['by_source']}")
            expected[f"{fleet.ASG_NAME} #{index + 1}"] = {"group-tag": 1}
            got[f"{fleet.ASG_NAME} #{index + 1}"] = result["by_source"]
    demo.scenes.expect(title, expected, got)

    title = "owner_tagger: daily backfill over every governed region (events/owner_tagger/backfill.json)"
    with step(title):
        result = demo.invoke("owner_tagger", event("owner_tagger/backfill.json"), "backfill")
        for region, summary in result["regions"].items():
            print(
                f"   {region}: {summary['instances']} untagged found, by source {summary['by_source']}, "
                f"{summary['volumes_tagged']} volumes tagged, {plural(summary['cloudtrail_pages'], 'CloudTrail page')}"
            )
    # erin's Spot job from her role's session; frank's from his IAM user, in the region no event came from;
    # mystery-west's launch is older than CloudTrail's 90 days.
    demo.scenes.expect(
        title,
        {fleet.HOME: {"assumed-role": 1}, fleet.OTHER: {"iam-user": 1, "unknown": 1}},
        {region: summary["by_source"] for region, summary in result["regions"].items()},
    )


# Machines whose "nothing to do" is the story: the sweep's summary leaves such decisions out, its log has them.
WATCHED = ("henry-tokenize",)


def logged_decisions(demo: Demo) -> list[dict[str, Any]]:
    """The idle decisions the last invocation logged."""
    demo.log.flush()
    lines = Path(demo.log.name).read_text().splitlines()[demo.log_seen :]
    demo.log_seen += len(lines)
    return [d for d in (json.loads(x) for x in lines if x.startswith("{")) if d.get("message") == "idle decision"]


def print_decisions(demo: Demo, seeded: fleet.SeededFleet, result: dict[str, Any], when: str) -> dict[str, str]:
    """Print the sweep's decisions, a line each; return them by machine name (a start made by the sweep as
    "<name> started": "morning-start" or "learned-start")."""
    names = {i: m.name for i, m in seeded.by_id().items()} | demo.names
    watched = {seeded.named(n).instance_id: n for n in WATCHED}
    actions: dict[str, str] = {}
    for logged in logged_decisions(demo):
        if logged["instance_id"] in watched and logged["action"] == "none":
            name = watched[logged["instance_id"]]
            print(f"   {name:<20} {'none':<14} {logged['reason']}")
            demo.timeline.append([when, name, fleet.HOME, "none", logged["reason"]])
            actions[name] = "none"
    for region, summary in result.get("regions", {}).items():
        for d in summary["decisions"]:
            name = names.get(d["instance_id"], d["instance_id"])
            print(f"   {name:<20} {d['action']:<14} {d['reason']}")
            demo.timeline.append([when, name, region, d["action"], d["reason"]])
            actions[name] = d["action"]
        for started in summary.get("started", []):
            name = names.get(started, started)
            if started in summary.get("learned_started", []):
                print(f"   {name:<20} {'learned-start':<14} started again before its recurring work")
                demo.timeline.append([when, name, region, "learned-start", "its daily job is due in 15 minutes"])
                actions[f"{name} started"] = "learned-start"
                continue
            print(f"   {name:<20} {'morning-start':<14} started before its working hours open")
            demo.timeline.append([when, name, region, "morning-start", "its working hours open in 5 minutes"])
            actions[f"{name} started"] = "morning-start"
        if summary.get("no_gpu_telemetry"):
            silent = ", ".join(names[i] for i in summary["no_gpu_telemetry"] if i in names)
            print(f"   {region}: no GPU telemetry from {silent}")
    return actions


def print_decisions_of(demo: Demo, seeded: fleet.SeededFleet) -> dict[str, str]:
    """A sweep now, and what it decided."""
    result = demo.invoke("idle_stopper", event("idle_stopper/sweep.json"), "sweep")
    return print_decisions(demo, seeded, result, f"{demo.clock:%H:%M}")


def activity(**fields: Any) -> dict[str, Any]:
    """What costguard's activity check prints on a machine (schema version 1)."""
    return {"v": 1, "at": 0, "sessions": [], "kernels": [], "cpu": [], "gpu": [], "hook": None, **fields}


IDLE_NOTEBOOK = activity(
    sessions=[{"tty": "pts/0", "idle_s": 5 * 3600}],
    kernels=[{"state": "idle", "idle_s": 5 * 3600}],
    gpu=[{"name": "python -m ipykernel_launcher", "mib": 15_360, "notebook": True}],
)


# What each sweep of the idle story must decide, by machine (a subset: the decisions the story is about).
FIRST_SWEEP = {
    "bob-notebook": "wait",  # warned by its alarm five minutes before
    "henry-tokenize": "none",  # one busy core of 192
    "erin-spot": "skip",
    "nina-nightly": "skip",  # inside its working hours
    "ivy-new": "skip",  # started 40 minutes before
    "root-test": "warn",
    "kim-notebook": "warn",
    "leo-finetune": "warn",
    "mallory-gpu": "warn",
    "quinn-a": "warn",
    "quinn-b": "warn",
    "quinn-c": "warn",
    "carol-batch": "stop",  # warned before the story, its recurring job learned
    "dave-eval": "warn",  # after 45 minutes: its own check saw nothing alive
    f"{fleet.ASG_NAME} #1": "protect",
    f"{fleet.ASG_NAME} #2": "unprotect",
    "frank-west": "warn",
    "mystery-west": "warn",
}
GRACE_SWEEP = {
    "bob-notebook": "stop",
    "mallory-gpu": "stop",
    "quinn-a": "stop",
    "quinn-b": "skip",  # quinn kept it
    "quinn-c": "stop",
    "dave-eval": "stop",
    "kim-notebook": "cancel-stop",  # she typed a minute before
    "leo-finetune": "skip",  # kept while it works
    "frank-west": "clear-warning",  # back at work
    "omar-morning started": "morning-start",
}


def idle_stopping(demo: Demo, seeded: fleet.SeededFleet, buttons: Callable[[], None] = lambda: None) -> None:
    bob = seeded.named("bob-notebook")
    gaps = demo.account.gaps
    # The machines with the SSM agent, and what their activity check says (the others are judged on metrics).
    gaps.activity[bob.instance_id] = IDLE_NOTEBOOK
    gaps.activity[seeded.named("kim-notebook").instance_id] = IDLE_NOTEBOOK
    gaps.activity[seeded.named("leo-finetune").instance_id] = activity()
    # The story's morning stops: a machine that cannot answer is not stopped in its owner's morning (a person's run
    # of the day may begin unseen), so these answer theirs, nobody at them (Default Host Management's promise).
    for name in ("mallory-gpu", "frank-west"):  # (and quinn's three, where they are seeded)
        gaps.activity[seeded.named(name).instance_id] = learned.quiet_check()
    demo.clock = demo.t0 - timedelta(minutes=40)
    title = (
        f"{demo.clock:%H:%M} idle_stopper: EC2 state changes create idle alarms "
        "(events/idle_stopper/ec2-state-running.json)"
    )
    with step(title):
        for machine in seeded.machines:
            if machine.region == fleet.HOME:
                demo.invoke(
                    "idle_stopper",
                    event("idle_stopper/ec2-state-running.json", **{"instance-id": machine.instance_id}),
                    "running",
                )
        names = demo.client("cloudwatch").describe_alarms(AlarmNamePrefix="costguard-idle-")["MetricAlarms"]
        print(
            f"   {len(names)} idle alarms, one per stoppable GPU instance in {fleet.HOME} (moto never evaluates them)"
        )
    alarms = {a["AlarmName"] for a in names}
    demo.scenes.expect(
        title, {"bob-notebook's alarm": True}, {"bob-notebook's alarm": f"costguard-idle-{bob.instance_id}" in alarms}
    )

    demo.clock = demo.t0 - timedelta(minutes=35)
    title = (
        f"{demo.clock:%H:%M} idle_stopper: bob-notebook's idle alarm goes to ALARM "
        "(events/idle_stopper/alarm-state-change.json)"
    )
    with step(title):
        result = demo.invoke(
            "idle_stopper",
            event("idle_stopper/alarm-state-change.json", alarmName=f"costguard-idle-{bob.instance_id}"),
            "alarm",
        )
        actions = print_decisions(demo, seeded, result, f"{demo.clock:%H:%M}")
    demo.scenes.expect(title, {"bob-notebook": "warn"}, actions)

    for minutes, note, expected in (
        (30, "the 15-minute sweep", FIRST_SWEEP),
        (10, "a button", {}),
        (0, "the sweep after the grace period", GRACE_SWEEP),
    ):
        if note == "a button":
            demo.clock = demo.t0 - timedelta(minutes=minutes)
            # mystery-west (no GPU metrics, no owner) is warned about, never stopped: nothing to keep it from.
            press(demo, seeded.named("leo-finetune").instance_id, "costguard.keep_while_busy", "U0LEO", "leo")
            buttons()
            # kim sits down and types, a minute before her machine's stop: too late for the metrics.
            gaps.activity[seeded.named("kim-notebook").instance_id] = activity(
                sessions=[{"tty": "pts/1", "idle_s": 60}],
                kernels=[{"state": "idle", "idle_s": 5 * 3600}],
                gpu=[{"name": "python -m ipykernel_launcher", "mib": 15_360, "notebook": True}],
            )
            continue
        demo.clock = demo.t0 - timedelta(minutes=minutes)
        title = f"{demo.clock:%H:%M} idle_stopper: {note} (events/idle_stopper/sweep.json)"
        with step(title):
            result = demo.invoke("idle_stopper", event("idle_stopper/sweep.json"), "sweep")
            actions = print_decisions(demo, seeded, result, f"{demo.clock:%H:%M}")
        demo.scenes.expect(title, expected, actions)
        demo.learned_starts.update(k for k, v in actions.items() if v == "learned-start")


def press(
    demo: Demo, instance_id: str, button: str, user_id: str, user_name: str, member: accounts.Member | None = None
) -> str:
    """A Slack user presses a button on costguard's message about the instance: Slack's signed request to the
    hub's Function URL (the Slack app's one), then the queued click, acted on in the machine's account. The
    click's status ("done"...), or why the button could not be pressed; the scene log says which."""
    title = f"{demo.clock:%H:%M} {user_name} presses {button}"
    about = [m for m in reversed(demo.slack.messages) if instance_id in json.dumps(m.blocks)]
    try:
        if not about:
            raise LookupError(f"no message about {instance_id} to press {button} on")
        message, (action, target) = pressable(about, instance_id, button)  # its buttons, or its line's menu
    except LookupError as missing:
        print(f"\n== {title}: it cannot, {missing}")
        demo.scenes.expect(title, {"click": "done"}, {"click": str(missing)})
        return str(missing)
    payload = json.loads((fleet.EVENTS / "slack_receiver/block-actions-keep-2h.json").read_text())
    payload["actions"] = [{**action, "action_ts": f"{demo.clock.timestamp():.6f}"}]
    payload["user"].update(id=user_id, username=user_name, name=user_name)
    payload["message"].update(ts=message.ts, blocks=message.blocks, text=message.text)
    payload["container"]["message_ts"] = message.ts
    payload["response_url"] = demo.slack.response_url(message.ts)
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(demo.clock.timestamp()))
    request = json.loads((fleet.EVENTS / "slack_receiver/function-url-request.json").read_text())
    request["headers"].update({"x-slack-request-timestamp": stamp, "x-slack-signature": sign("local", stamp, body)})
    request["body"] = base64.b64encode(body).decode()
    where = f"buttons in account {target.get('a')}" if member else "buttons"
    with step(f"{demo.clock:%H:%M} slack_receiver then {where}: {user_name} presses {button} (events/slack_receiver/)"):
        answer = demo.invoke("slack_receiver", request, f"{button} request")
        if member is None:
            sqs, queue = demo.client("sqs"), demo.queue
        else:
            sqs, queue = member.client("sqs"), member.click_queue
        records = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
        result = demo.invoke("buttons", {"Records": [{"body": m["Body"]} for m in records]}, f"{button} click", member)
        print(f"   Slack got HTTP {answer['statusCode']} at once; the queued click: {result['clicks']}")
        status = str(result["clicks"][0]["status"]) if result["clicks"] else "no click queued"
        demo.timeline.append([f"{demo.clock:%H:%M}", user_name, target["r"], button, status])
    demo.scenes.expect(
        title, {"Slack's answer": 200, "click": "done"}, {"Slack's answer": answer["statusCode"], "click": status}
    )
    return status


def pressable(about: list[Any], instance_id: str, button: str) -> tuple[Any, tuple[dict[str, Any], dict[str, Any]]]:
    """The newest message about the machine that offers `button` for it (a stop notice is a reply under its
    warning, and the warning, changed in place, offers what undoes the stop), and that control."""
    for message in about:
        try:
            return message, grouped.control(message.blocks, instance_id, button)
        except LookupError:
            continue
    raise LookupError(f"no {button} for {instance_id} in any message about it")


def billing(demo: Demo, seeded: fleet.SeededFleet) -> None:
    budget_event = event("budget_alerts/sns-actual-75.json")
    month_to_date = float(
        budget_event["Records"][0]["Sns"]["Message"].split("ACTUAL Amount: $")[1].split()[0].replace(",", "")
    )
    fleet.seed_billing(demo.account.gaps, seeded, demo.clock, month_to_date)
    title = (
        f"{demo.clock:%H:%M} budget_alerts: AWS Budgets at 75 % of the month, delivered twice by SNS "
        "(events/budget_alerts/sns-actual-75.json)"
    )
    statuses = []
    with step(title):
        for _ in range(2):
            result = demo.invoke("budget_alerts", budget_event, "sns-actual-75")
            for note in result["notifications"]:
                print(f"   {note['status']:<12} {note['key']}")
                statuses.append(note["status"])
    demo.scenes.expect(title, {"deliveries": ["posted", "duplicate"]}, {"deliveries": statuses})
    title = (
        f"{demo.clock:%H:%M} budget_alerts: a notification costguard cannot read, posted as it came "
        "(someone tests the budget topic from the SNS console)"
    )
    with step(title):
        unknown = event("budget_alerts/sns-unknown.json")  # its text, an older anomaly mail's, is replaced:
        sns = unknown["Records"][0]["Sns"]  # costguard reads Cost Anomaly Detection's alerts (the next scene)
        sns.update(Subject="Test", Message="Testing the budget topic from the SNS console. Does costguard see this?")
        result = demo.invoke("budget_alerts", unknown, "sns-unknown")
        print(f"   {result['notifications'][0]['status']}")
    demo.scenes.expect(title, {"delivery": "posted-raw"}, {"delivery": result["notifications"][0]["status"]})
    title = (
        f"{demo.clock:%H:%M} budget_alerts: Cost Anomaly Detection finds EC2 jumping, by EventBridge and SNS, "
        "then again bigger (events/budget_alerts/*anomaly.json)"
    )
    with step(title):
        told = anomaly.scene(demo.account.gaps, demo.invoke, demo.clock)
        for label, status in told:
            print(f"   {label:<42} → {status}")
    demo.scenes.expect(
        title, {"deliveries": ["posted", "unchanged", "updated"]}, {"deliveries": [status for _, status in told]}
    )
    title = f"{demo.clock:%H:%M} commitment_tracker: the daily check (events/commitment_tracker/daily.json)"
    with step(title):
        result = demo.invoke("commitment_tracker", event("commitment_tracker/daily.json"), "daily")
        print(
            f"   {result['commitments']} commitments, reminders {result['reminders']}, under-used {result['underused']}"
        )
    # The p4d Reserved Instances expire in a month; the g5.12xlarge ones are used at 38 %.
    demo.scenes.expect(
        title,
        {"reminders": 1, "under-used": 1},
        {"reminders": len(result["reminders"]), "under-used": len(result["underused"])},
    )


def deep_dive(demo: Demo, seeded: fleet.SeededFleet) -> None:
    member = (accounts.MEMBER, accounts.REGION, accounts.MACHINE_TYPE, accounts.OWNER)
    # The quarter's bill, and Cost Anomaly Detection's findings in it.
    fleet.seed_quarter(demo.account.gaps, seeded, demo.clock, member)
    title = f"{demo.clock:%H:%M} deep_dive: the quarterly deep dive into EC2 spend (events/deep_dive/quarterly.json)"
    with step(title):
        # costguard's weekly records of the quarter: the demo simulates one week, the one this morning's digest
        # kept; the quarter is that record repeated (said here and on the page), so the two agree.
        records = WeekRecords(demo.client("dynamodb"), demo.runtime().settings.state_table)
        weeks = week.quarter(records, HUB, demo.clock)
        print(
            f"   costguard's quarter: {plural(weeks, 'weekly record')}, each the week the demo simulated "
            "(demo/week.py) as this morning's digest kept it: one week, repeated, not a quarter's sweeps"
        )
        result = demo.invoke("deep_dive", event("deep_dive/quarterly.json"), "quarterly")
        print(
            f"   {result['quarter']}: ${result['total_usd']:,.0f} of EC2 compute, {result['lines']} lines, "
            f"{result['anomalies']} anomalies ({result['anomaly_source'].split(':')[0]}), "
            f"{plural(result['region_moves'], 'region move')}; chart and CSV {result['files']}"
        )
    demo.scenes.expect(
        title,
        {"anomalies found": True, "chart and CSV": 2, "weekly records read": weeks},
        {
            "anomalies found": result["anomalies"] > 0,
            "chart and CSV": len(result["files"]),
            "weekly records read": result["weeks_recorded"],
        },
    )


def weekly(demo: Demo) -> None:
    title = f"{demo.clock:%H:%M} weekly_digest: the Monday digest (events/weekly_digest/weekly.json)"
    with step(title):
        result = demo.invoke("weekly_digest", event("weekly_digest/weekly.json"), "weekly")
        print(
            f"   {result['instances']} GPU machines, {result['idle_gpu_hours']:.0f} idle GPU-hours, "
            f"${result['waste_usd']:,.0f} wasted; chart {result['chart_file']}; owners handed to the hub "
            f"{result['owners_handed']} (the hub tells each person once, for every account)"
        )
    demo.scenes.expect(
        title,
        {"idle GPU-hours counted": True, "chart posted": True, "owners handed to the hub": True},
        {
            "idle GPU-hours counted": result["idle_gpu_hours"] > 0,
            "chart posted": bool(result["chart_file"]),
            "owners handed to the hub": bool(result["owners_handed"]),
        },
    )


def organization(demo: Demo, member: accounts.Member) -> None:
    """The member account: its own sweep warns ivy, whose Stop button goes through the hub to the member's
    worker; its weekly digest hands its week to the hub, whose organization digest shows both accounts."""
    title = f"{demo.clock:%H:%M} idle_stopper in member account {accounts.MEMBER} ({accounts.REGION}): its own sweep"
    with step(title):
        result = demo.invoke("idle_stopper", event("idle_stopper/sweep.json"), "sweep", member)
        actions = {}
        for d in result["regions"][accounts.REGION]["decisions"]:
            print(f"   {'ivy-train':<20} {d['action']:<14} {d['reason']}")
            demo.timeline.append([f"{demo.clock:%H:%M}", "ivy-train", accounts.REGION, d["action"], d["reason"]])
            actions["ivy-train"] = d["action"]
    demo.scenes.expect(title, {"ivy-train": "warn"}, actions)
    press(demo, member.machine, "costguard.stop_now", "U0IVY", "ivy", member=member)
    state = member.client("ec2").describe_instances(InstanceIds=[member.machine])["Reservations"][0]["Instances"][0]
    print(f"   ivy-train in {accounts.MEMBER} is now {state['State']['Name']}")
    demo.scenes.expect(
        f"ivy-train, in member account {accounts.MEMBER}, stopped from Slack through the hub",
        {"stopped": True},
        {"stopped": state["State"]["Name"] in ("stopping", "stopped")},
    )
    demo.clock += timedelta(minutes=5)
    title = f"{demo.clock:%H:%M} weekly_digest in member account {accounts.MEMBER}: its week, handed to the hub"
    with step(title):
        demo.account.set_env(ACCOUNT_LABEL="training")
        load_handler("weekly_digest")._settings.cache_clear()
        result = demo.invoke("weekly_digest", event("weekly_digest/weekly.json"), "weekly", member)
        demo.account.set_env(ACCOUNT_LABEL="research")
        load_handler("weekly_digest")._settings.cache_clear()
        print(
            f"   {result['idle_gpu_hours']:.0f} idle GPU-hours, ${result['waste_usd']:,.0f} wasted; "
            f"week handed to the hub: {result['handed_over']}"
        )
    demo.scenes.expect(title, {"handed over": True}, {"handed over": result["handed_over"]})
    title = f"{demo.clock:%H:%M} organization_digest at the hub (events/organization_digest/weekly.json)"
    with step(title):
        result = demo.invoke("organization_digest", event("organization_digest/weekly.json"), "weekly")
        print(
            f"   accounts {result['accounts']}, missing {result['missing']}: {result['idle_gpu_hours']:.0f} idle "
            f"GPU-hours, ${result['waste_usd']:,.0f} wasted across the organization"
        )
    # Both accounts' weeks, the one that never reported named, and each owner told once for both accounts.
    demo.scenes.expect(
        title,
        {"accounts": sorted([HUB, accounts.MEMBER]), "missing": [accounts.SILENT], "owners told": True},
        {
            "accounts": sorted(result["accounts"]),
            "missing": result["missing"],
            "owners told": bool(result["owners_told"]),
        },
    )


def fleet_rows(demo: Demo, seeded: fleet.SeededFleet, member: accounts.Member) -> list[list[str]]:
    names = seeded.by_id()
    rows = []
    places = [(demo.client("ec2", region), region, "") for region in (fleet.HOME, fleet.OTHER)]
    places.append((member.client("ec2"), accounts.REGION, f" ({accounts.MEMBER})"))
    for ec2, region, account in places:
        for reservation in ec2.describe_instances()["Reservations"]:
            for raw in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in raw.get("Tags", [])}
                machine = names.get(raw["InstanceId"])
                name = machine.name if machine else tags.get("Name", f"{fleet.ASG_NAME} member")
                state = [
                    f"{k.removeprefix('costguard:')}={v}"
                    for k, v in sorted(tags.items())
                    if k.startswith("costguard:") and k not in ("costguard:created-by", "costguard:owner-source")
                ]
                story = machine.story if machine else "Auto Scaling group member"
                rows.append(
                    [
                        name,
                        raw["InstanceId"],
                        region + account,
                        raw["InstanceType"],
                        raw["State"]["Name"],
                        tags.get("Owner", "—"),
                        tags.get("costguard:owner-source", "—"),
                        "; ".join(state) or "—",
                        "member account: idle three days, stopped from Slack through the hub" if account else story,
                    ]
                )
    return rows


class Transcript:
    """stdout, kept as well as shown: the HTML page tells the same story, scene by scene."""

    def __init__(self, shown: Any) -> None:
        self.shown = shown
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return int(self.shown.write(text))

    def flush(self) -> None:
        self.shown.flush()

    def text(self) -> str:
        return "".join(self.parts)


def instance_tags(demo: Demo) -> dict[str, dict[str, str]]:
    """Every instance's tags in the governed regions, by instance id."""
    return {
        raw["InstanceId"]: {t["Key"]: t["Value"] for t in raw.get("Tags", [])}
        for region in (fleet.HOME, fleet.OTHER)
        for reservation in demo.client("ec2", region).describe_instances()["Reservations"]
        for raw in reservation["Instances"]
    }


SWEEP_EVENT = "(events/idle_stopper/sweep.json)"


def week_before(demo: Demo, seeded: fleet.SeededFleet) -> week.Week:
    """The idle stopper's evenings of the days before the story (demo/week.py), summed up in one line: the
    ledger the weekly digest reads holds them; the page shows the story's messages only. Then the fortnight's
    hourly metrics, but while a machine was stopped."""

    def running(machine: fleet.Machine) -> Any:
        changed = event("idle_stopper/ec2-state-running.json", **{"instance-id": machine.instance_id})
        changed.update(region=machine.region, time=f"{demo.clock:%Y-%m-%dT%H:%M:%SZ}")
        changed["resources"] = [f"arn:aws:ec2:{machine.region}:{HUB}:instance/{machine.instance_id}"]
        return demo.invoke("idle_stopper", changed, "running")

    slack = demo.slack
    posted, said, files = len(slack.messages), len(slack.said), len(slack.files)
    with step(f"The {week.DAYS} days before the story: the idle stopper's evenings (demo/week.py)"):
        done = week.run(
            demo,
            seeded,
            partial(demo.invoke, "idle_stopper", event("idle_stopper/sweep.json"), "sweep"),
            running,
            demo.t0,
        )
        print(
            f"   a week of sweeps before: {plural(done.sweeps, 'sweep')}, {plural(done.warnings, 'warning')}, "
            f"{plural(done.stops, 'stop')}, {plural(done.starts, 'start')} by their people in the morning"
        )
        hourly = fleet.seed_week(demo.client, seeded, demo.t0, done.off, done.fortnight)
        print(
            f"   and {hourly:,} hourly points of the fortnight before, none while a machine was stopped; the week "
            "before the sweeps is the same fleet, which nothing stopped at night"
        )
    del slack.messages[posted:], slack.said[said:], slack.files[files:]
    del demo.invocations[:], demo.timeline[:]
    logged_decisions(demo)  # the story's sweeps read their own decisions from the log
    return done


def first_deploy(demo: Demo, seeded: fleet.SeededFleet) -> None:
    """A first `sam deploy` leaves costguard in Mode=dry-run: a sweep changes nothing and tells only the alerts
    channel what it would have done (docs/deploying.md#modes). In life such reports come first, for a week or so,
    before Mode=enforce; the demo's week before the story already ran in enforce (demo/week.py), so this scene
    shows what a first deploy would report, on this morning's fleet, and says so; the hour after is in enforce."""
    hub = demo.runtime()
    dry_run = Runtime(dataclasses.replace(hub.settings, mode=Mode.DRY_RUN), hub.clients)
    demo.clock = demo.t0 - timedelta(minutes=50)
    before, tags = len(demo.slack.messages), instance_tags(demo)
    title = f"{demo.clock:%H:%M} What a first deploy reports, Mode=dry-run: an idle_stopper sweep " + SWEEP_EVENT
    with step(title):
        result = demo.invoke("idle_stopper", event("idle_stopper/sweep.json"), "sweep (dry-run)", runtime=dry_run)
        actions = print_decisions(demo, seeded, result, f"{demo.clock:%H:%M} (dry-run)")
        posted = demo.slack.messages[before:]
        where = sorted({"DM" if m.direct else m.channel for m in posted})
        unchanged = instance_tags(demo) == tags
        alarms = demo.client("cloudwatch").describe_alarms(AlarmNamePrefix="costguard-idle-")["MetricAlarms"]
        print(
            f"   {plural(len(posted), 'message')}, to {', '.join(where) or 'nobody'}: what it would have done; "
            f"{'no tag changed' if unchanged else 'TAGS CHANGED'}, nothing stopped, {len(alarms)} alarms"
        )
        print(
            "   (a first deploy's report, shown on this morning's fleet: in life a week of these comes before "
            "Mode=enforce; the demo's week above, and its hour below, run in enforce)"
        )
    demo.scenes.expect(
        title,
        {"told": [ALERTS], "tags unchanged": True, "alarms": 0, "bob-notebook": "warn", "kim-notebook": "warn"},
        {"told": where, "tags unchanged": unchanged, "alarms": len(alarms), **actions},
    )


def hostile_owner(demo: Demo) -> None:
    posted = [m.text + json.dumps(m.blocks) for m in demo.slack.messages]
    carrying = [p for p in posted if "re-authenticate" in p]
    raw = [p for p in carrying if "<!channel>" in p or "<https://example.com" in p]
    title = f"The hostile Owner tag {fleet.HOSTILE_OWNER!r}"
    print(
        f"\n== {title}: in {plural(len(carrying), 'message')}, "
        + (f"RAW in {len(raw)}: it would ping the channel" if raw else "escaped in every one (pings nobody)")
    )
    demo.scenes.expect(title, {"shown": True, "raw": 0}, {"shown": bool(carrying), "raw": len(raw)})


def page(demo: Demo, transcript: str, rows: list[list[str]]) -> str:
    """demo-output/index.html: Slack's messages first, the story and its tables folded below."""
    folded = [
        render.Section("The story, scene by scene", render.story(transcript)),
        render.Section(
            "The fleet at the end",
            render.table(
                ["name", "instance", "region", "type", "state", "Owner", "owner-source", "costguard state", "story"],
                rows,
            ),
        ),
        render.Section(
            "What the idle stopper decided",
            render.table(["time (UTC)", "name", "region", "action", "reason"], demo.timeline),
        ),
        render.Section(
            "Invocations",
            render.table(
                ["time (UTC)", "function", "event", "seconds"],
                [[t, f, e, f"{s:.2f}"] for t, f, e, s in demo.invocations],
            ),
        ),
    ]
    when = demo.t0.astimezone(ZoneInfo(TEAM_ZONE))
    intro = (
        f"What costguard posted to Slack in the demo's story, {when:%A %d %B %Y}, {when:%H:%M} in {TEAM_ZONE} "
        f"({demo.t0:%H:%M} UTC): what a first deploy in dry-run would report on this morning's fleet, then an hour "
        "of the governance cycle in enforce, two accounts. costguard ran in enforce the week before (its messages "
        "are not shown): the weekly digest reads that week, and the quarterly deep dive repeats the one week the "
        "demo simulates over the quarter. The story, the fleet and every decision are folded below the messages."
    )
    return render.page(
        "costguard demo", folded, demo.slack.messages, demo.slack.users, uploads=demo.slack.files, intro=intro
    )


def main() -> int:
    # The demo's process holds moto's whole account (tens of thousands of datapoints, each an object): the
    # collector's full passes over them cost seconds. What the imports and the seeding made stays for the
    # whole run, so it is frozen out of the collector's passes, and the passes come less often.
    gc.set_threshold(50_000, 20, 100)
    transcript = Transcript(sys.stdout)
    sys.stdout = transcript
    demo = Demo()
    try:
        print("costguard demo: an emulated AWS account (moto on 127.0.0.1) and a local Slack stand-in")
        when = demo.t0.astimezone(ZoneInfo(TEAM_ZONE))
        print(
            f"The story's clock: {when:%A %d %B %Y %H:%M} in {TEAM_ZONE} ({demo.t0:%H:%M} UTC), whatever the time "
            "now; times below are UTC"
        )
        with step("Seeding the ML fleet"):
            seeded = fleet.seed(demo.client, demo.account.gaps, demo.t0)
            quinn = grouped.seed(demo.client, demo.slack.users, demo.t0)
            for iid in quinn:  # they answer their check: stopped in the story's morning (idle_stopping)
                demo.account.gaps.activity[iid] = learned.quiet_check()
            demo.names.update(zip(quinn, grouped.NAMES, strict=True))
            demo.names.update({i: f"{fleet.ASG_NAME} #{n + 1}" for n, i in enumerate(seeded.asg_instances)})
            daily_run = learned.seed(demo.client, demo.account.gaps, seeded, demo.t0)  # demo/learned.py
            demo.account.set_env(SHORTEST_STOP_MINUTES=learned.SHORTEST_STOP_MINUTES)
            history = sum(len(v) for v in demo.account.gaps.trail.values())
            print(
                f"   {len(seeded.machines) + len(seeded.asg_instances)} instances in {fleet.HOME} and {fleet.OTHER}, "
                f"4 h of CPU and GPU metrics up to {demo.t0:%H:%M} UTC, "
                f"{history} launches in CloudTrail history"
            )
        demo.runtime()  # the Lambda environment is complete: the hub's costguard, as its first invocation builds it
        gc.freeze()  # the fleet and its history live as long as the demo
        week_before(demo, seeded)
        first_deploy(demo, seeded)
        demo.clock = demo.t0 - timedelta(minutes=45)
        owner_tagging(demo, seeded)
        idle_stopping(demo, seeded, lambda: grouped.keep_the_second(partial(press, demo), quinn))
        demo.clock = demo.t0 + timedelta(minutes=5)
        press(demo, seeded.named("bob-notebook").instance_id, "costguard.start", "U0BOB", "bob")
        title, actions = learned.start_scene(demo, lambda: print_decisions_of(demo, seeded), daily_run)
        demo.learned_starts.update(k for k, v in actions.items() if v == "learned-start")
        # bob's machine, started again from Slack, is not stopped again; carol-batch's learned start came with
        # this sweep or the one before.
        demo.scenes.expect(
            title,
            {"bob-notebook": "clear-warning", "carol-batch started": "learned-start"},
            {
                **actions,
                "carol-batch started": "learned-start" if "carol-batch started" in demo.learned_starts else None,
            },
        )
        sagemaker.scene(demo, demo.t0, step)  # a notebook instance stopped, a zombie endpoint warned
        billing(demo, seeded)
        with step(f"Several accounts: member account {accounts.MEMBER} joins the hub's Slack app"):
            member = accounts.join(demo.account, demo.runtime(), demo.t0, demo.botocore_session())
            print(f"   ivy-train ({accounts.MACHINE_TYPE}) in {accounts.REGION}, idle for three days")
        weekly(demo)
        organization(demo, member)
        deep_dive(demo, seeded)

        rows = fleet_rows(demo, seeded, member)
        print("\n== The fleet at the end")
        for row in rows:
            print(f"   {row[0]:<20} {row[2]:<10} {row[3]:<13} {row[4]:<8} Owner={row[5]:<20} {row[7]}")
        print(f"\n== Slack: {plural(len(demo.slack.messages), 'message')}")
        for message in demo.slack.messages:
            where = "DM " + message.channel if message.direct else message.channel
            print(f"   [{where}] {message.text}")
        hostile_owner(demo)
        if demo.slack.refused:  # testing/blockkit.py: what Slack would have refused, and why
            print("\n== Slack would refuse:\n" + "\n".join(f"   {r}" for r in demo.slack.refused))
            return 1
        print(
            f"== Block Kit: none of the {len(demo.slack.messages)} messages (and their edits) refused by Slack's rules"
        )

        (OUT / "index.html").write_text(page(demo, transcript.text(), rows))
        # Every message as Slack received it, for comparing two runs of the demo (text and blocks).
        (OUT / "messages.json").write_text(json.dumps([asdict(m) for m in demo.slack.messages], indent=1))
        # And every post, edit and reply as costguard sent it (an edit replaces a message in messages.json).
        (OUT / "said.json").write_text(json.dumps([{"how": how, **said} for how, said in demo.slack.said], indent=1))
        print(f"\nHTML: {OUT / 'index.html'}   Lambda logs: {OUT / 'lambda-logs.jsonl'}")
        print(f"Calls answered by testing/aws_gaps.py instead of moto: {sorted(set(demo.account.gaps.answered))}")
        print(
            f"The handlers waited {demo.time.waited:.0f} s ({demo.time.waits} waits: activity checks, Slack's pace) "
            "on the demo's clock, none on the wall clock"
        )
    finally:
        demo.scenes.write(OUT / "scenes.json")  # what happened, even when a scene broke the story
        demo.close()
        sys.stdout = transcript.shown
    missing = demo.scenes.not_happened()
    print(
        f"\n== The story: {len(demo.scenes.scenes)} scenes, "
        + (f"{len(missing)} did NOT happen" if missing else "each as told")
    )
    for line in demo.scenes.lines():
        if "DID NOT HAPPEN" in line:
            print(line)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
