"""`make demo`: costguard's governance cycle against a local emulated AWS account and Slack.

Starts moto's server on 127.0.0.1 behind the gap proxy (testing/aws_gaps.py) and the Slack stand-in,
seeds the fleet (demo/fleet.py), then runs each function's handler in-process on the payloads in
events/, with the real boto3 and slack-sdk clients, on a demo clock that lets 40 minutes pass. It
prints what happened and writes demo-output/index.html with every Slack message as Slack shows it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from costguard.core.observability import logger
from costguard.runtime import Runtime
from costguard.slack.signature import sign
from demo import accounts, anomaly, fleet, grouped, learned, render, sagemaker
from demo.clock import DemoClock
from testing import moto_fixes
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
        self.client = self.account.client
        self.account.activate(
            ALERTS_CHANNEL=ALERTS,
            DIGEST_CHANNEL=DIGEST,
            GOVERNED_REGIONS=f"{fleet.HOME},{fleet.OTHER}",
            SLACK_ADMINS="U0PLATFORM",
            TEAM_TIMEZONE="Europe/Paris",
            ACTIVITY_CHECK_DOCUMENT="costguard-ActivityCheckDocument",
            ACTIVITY_CHECK_SECONDS="10",
        )
        self.queue = str(self.account.client("sqs").create_queue(QueueName="costguard-clicks")["QueueUrl"])
        # The hub of an organization of two accounts (and a third that never reports): see demo/accounts.py.
        figures = self.account.client("sqs").create_queue(QueueName="costguard-figures")["QueueUrl"]
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
        real = datetime.now(UTC).replace(second=0, microsecond=0)
        self.t0 = real - timedelta(minutes=real.minute % 5)  # the fleet's metrics run up to here
        # The handlers read the time and wait on the demo's clock: it moves forward instead of 40 minutes
        # passing, and their waits (activity checks, Slack's pace) cost it seconds, not the wall clock.
        self.time = DemoClock(self.t0)
        self.time.install()
        moto_fixes.launch_time_at_start(self.time.now)  # a machine started again is one just started, as in AWS
        self.invocations: list[tuple[str, str, str, float]] = []
        self.timeline: list[list[str]] = []

    @property
    def clock(self) -> datetime:
        """The demo's time, which a scene sets or moves forward."""
        return self.time.at

    @clock.setter
    def clock(self, value: datetime) -> None:
        self.time.at = value

    def invoke(self, function: str, payload: Any, label: str, member: accounts.Member | None = None) -> Any:
        """The function's handler on `payload`, in the hub (this account) or in the member account."""
        handler = load_handler(function).lambda_handler
        started = time.perf_counter()
        with contextlib.redirect_stdout(self.log):
            if member is None:
                result = handler(payload, LambdaContext())
            else:
                result = handler(payload, accounts.MemberContext(), runtime=member.runtime)
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


def owner_tagging(demo: Demo, seeded: fleet.SeededFleet) -> None:
    with step("owner_tagger: real-time RunInstances events (events/owner_tagger/*.json)"):
        for machine in seeded.machines:
            if machine.launch_event:
                result = demo.invoke("owner_tagger", fleet.launch_event(machine), machine.launch_event)
                print(f"   {machine.name:<20} {machine.launch_event:<36} → {result['by_source']}")
        for instance_id in seeded.asg_instances:
            member = fleet.Machine(
                "asg", fleet.HOME, "g5.2xlarge", "", "runinstances-autoscaling.json", instance_id=instance_id
            )
            result = demo.invoke("owner_tagger", fleet.launch_event(member), "runinstances-autoscaling.json")
            print(f"   {fleet.ASG_NAME + ' member':<20} {'runinstances-autoscaling.json':<36} → {result['by_source']}")

    with step("owner_tagger: daily backfill over every governed region (events/owner_tagger/backfill.json)"):
        result = demo.invoke("owner_tagger", event("owner_tagger/backfill.json"), "backfill")
        for region, summary in result["regions"].items():
            print(
                f"   {region}: {summary['instances']} untagged found, by source {summary['by_source']}, "
                f"{summary['volumes_tagged']} volumes tagged, {summary['cloudtrail_pages']} CloudTrail page(s)"
            )


# Machines whose "nothing to do" is the story: the sweep's summary leaves such decisions out, its log has them.
WATCHED = ("henry-tokenize",)


def logged_decisions(demo: Demo) -> list[dict[str, Any]]:
    """The idle decisions the last invocation logged."""
    demo.log.flush()
    lines = Path(demo.log.name).read_text().splitlines()[demo.log_seen :]
    demo.log_seen += len(lines)
    return [d for d in (json.loads(x) for x in lines if x.startswith("{")) if d.get("message") == "idle decision"]


def print_decisions(demo: Demo, seeded: fleet.SeededFleet, result: dict[str, Any], when: str) -> None:
    names = seeded.by_id()
    watched = {seeded.named(n).instance_id: n for n in WATCHED}
    for logged in logged_decisions(demo):
        if logged["instance_id"] in watched and logged["action"] == "none":
            name = watched[logged["instance_id"]]
            print(f"   {name:<20} {'none':<14} {logged['reason']}")
            demo.timeline.append([when, name, fleet.HOME, "none", logged["reason"]])
    for index, member in enumerate(seeded.asg_instances):
        names.setdefault(member, fleet.Machine(f"{fleet.ASG_NAME} #{index + 1}", fleet.HOME, "g5.2xlarge", ""))
    for region, summary in result.get("regions", {}).items():
        for d in summary["decisions"]:
            name = names[d["instance_id"]].name if d["instance_id"] in names else d["instance_id"]
            print(f"   {name:<20} {d['action']:<14} {d['reason']}")
            demo.timeline.append([when, name, region, d["action"], d["reason"]])
        for started in summary.get("started", []):
            name = names[started].name if started in names else started
            if started in summary.get("learned_started", []):
                print(f"   {name:<20} {'learned-start':<14} started again before its recurring work")
                demo.timeline.append([when, name, region, "learned-start", "its nightly job is due in 15 minutes"])
                continue
            print(f"   {name:<20} {'morning-start':<14} started before its working hours open")
            demo.timeline.append([when, name, region, "morning-start", "its working hours open in 5 minutes"])
        if summary.get("no_gpu_telemetry"):
            silent = ", ".join(names[i].name for i in summary["no_gpu_telemetry"] if i in names)
            print(f"   {region}: no GPU telemetry from {silent}")


def print_decisions_of(demo: Demo, seeded: fleet.SeededFleet) -> None:
    """A sweep now, and what it decided."""
    result = demo.invoke("idle_stopper", event("idle_stopper/sweep.json"), "sweep")
    print_decisions(demo, seeded, result, f"{demo.clock:%H:%M}")


def activity(**fields: Any) -> dict[str, Any]:
    """What costguard's activity check prints on a machine (schema version 1)."""
    return {"v": 1, "at": 0, "sessions": [], "kernels": [], "cpu": [], "gpu": [], "hook": None, **fields}


IDLE_NOTEBOOK = activity(
    sessions=[{"tty": "pts/0", "idle_s": 5 * 3600}],
    kernels=[{"state": "idle", "idle_s": 5 * 3600}],
    gpu=[{"name": "python -m ipykernel_launcher", "mib": 15_360, "notebook": True}],
)


def idle_stopping(demo: Demo, seeded: fleet.SeededFleet, buttons: Callable[[], None] = lambda: None) -> None:
    bob = seeded.named("bob-notebook")
    gaps = demo.account.gaps
    # The machines with the SSM agent, and what their activity check says (the others are judged on metrics).
    gaps.activity[bob.instance_id] = IDLE_NOTEBOOK
    gaps.activity[seeded.named("kim-notebook").instance_id] = IDLE_NOTEBOOK
    gaps.activity[seeded.named("leo-finetune").instance_id] = activity()
    demo.clock = demo.t0 - timedelta(minutes=40)
    with step(
        f"{demo.clock:%H:%M} idle_stopper: EC2 state changes create idle alarms "
        "(events/idle_stopper/ec2-state-running.json)"
    ):
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

    demo.clock = demo.t0 - timedelta(minutes=35)
    with step(
        f"{demo.clock:%H:%M} idle_stopper: bob-notebook's idle alarm goes to ALARM "
        "(events/idle_stopper/alarm-state-change.json)"
    ):
        result = demo.invoke(
            "idle_stopper",
            event("idle_stopper/alarm-state-change.json", alarmName=f"costguard-idle-{bob.instance_id}"),
            "alarm",
        )
        print_decisions(demo, seeded, result, f"{demo.clock:%H:%M}")

    for minutes, note in ((30, "the 15-minute sweep"), (10, "a button"), (0, "the sweep after the grace period")):
        if note == "a button":
            demo.clock = demo.t0 - timedelta(minutes=minutes)
            mystery = seeded.named("mystery-west")
            press(demo, mystery.instance_id, "costguard.keep_monday", "U0PLATFORM", "platform")
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
        with step(f"{demo.clock:%H:%M} idle_stopper: {note} (events/idle_stopper/sweep.json)"):
            result = demo.invoke("idle_stopper", event("idle_stopper/sweep.json"), "sweep")
            print_decisions(demo, seeded, result, f"{demo.clock:%H:%M}")


def press(
    demo: Demo, instance_id: str, button: str, user_id: str, user_name: str, member: accounts.Member | None = None
) -> None:
    """A Slack user presses a button on costguard's message about the instance: Slack's signed request to the
    hub's Function URL (the Slack app's one), then the queued click, acted on in the machine's account."""
    message = next(m for m in reversed(demo.slack.messages) if instance_id in json.dumps(m.blocks))
    payload = json.loads((fleet.EVENTS / "slack_receiver/block-actions-keep-2h.json").read_text())
    action, target = grouped.control(message.blocks, instance_id, button)  # its buttons, or its line's menu
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
        demo.timeline.append([f"{demo.clock:%H:%M}", user_name, target["r"], button, result["clicks"][0]["status"]])


def billing(demo: Demo, seeded: fleet.SeededFleet) -> None:
    budget_event = event("budget_alerts/sns-actual-75.json")
    month_to_date = float(
        budget_event["Records"][0]["Sns"]["Message"].split("ACTUAL Amount: $")[1].split()[0].replace(",", "")
    )
    fleet.seed_billing(demo.account.gaps, seeded, demo.clock, month_to_date)
    with step(
        f"{demo.clock:%H:%M} budget_alerts: AWS Budgets at 75 % of the month, delivered twice by SNS "
        "(events/budget_alerts/sns-actual-75.json)"
    ):
        for _ in range(2):
            result = demo.invoke("budget_alerts", budget_event, "sns-actual-75")
            for note in result["notifications"]:
                print(f"   {note['status']:<12} {note['key']}")
    with step(
        f"{demo.clock:%H:%M} budget_alerts: a notification costguard cannot read, posted as it came "
        "(someone tests the budget topic from the SNS console)"
    ):
        unknown = event("budget_alerts/sns-unknown.json")  # its text, an older anomaly mail's, is replaced:
        sns = unknown["Records"][0]["Sns"]  # costguard reads Cost Anomaly Detection's alerts (the next scene)
        sns.update(Subject="Test", Message="Testing the budget topic from the SNS console. Does costguard see this?")
        result = demo.invoke("budget_alerts", unknown, "sns-unknown")
        print(f"   {result['notifications'][0]['status']}")
    with step(
        f"{demo.clock:%H:%M} budget_alerts: Cost Anomaly Detection finds EC2 jumping, by EventBridge and SNS, "
        "then again bigger (events/budget_alerts/*anomaly.json)"
    ):
        for line in anomaly.scene(demo.account.gaps, demo.invoke, demo.clock):
            print(f"   {line}")
    with step(f"{demo.clock:%H:%M} commitment_tracker: the daily check (events/commitment_tracker/daily.json)"):
        result = demo.invoke("commitment_tracker", event("commitment_tracker/daily.json"), "daily")
        print(
            f"   {result['commitments']} commitments, reminders {result['reminders']}, under-used {result['underused']}"
        )


def deep_dive(demo: Demo, seeded: fleet.SeededFleet) -> None:
    member = (accounts.MEMBER, accounts.REGION, accounts.MACHINE_TYPE, accounts.OWNER)
    fleet.seed_quarter(demo.account.gaps, seeded, demo.clock, member)
    # costguard ran all quarter: its weekly records, made from this week's (which the digest just kept)
    weeks = fleet.seed_weekly_records(demo.client("dynamodb"), HUB, demo.clock)
    print(f"   (the quarter's history: {weeks} weekly records, each this week's figures scaled)")
    with step(
        f"{demo.clock:%H:%M} deep_dive: the quarterly deep dive into EC2 spend (events/deep_dive/quarterly.json)"
    ):
        result = demo.invoke("deep_dive", event("deep_dive/quarterly.json"), "quarterly")
        print(
            f"   {result['quarter']}: ${result['total_usd']:,.0f} of EC2 compute, {result['lines']} lines, "
            f"{result['anomalies']} anomalies ({result['anomaly_source'].split(':')[0]}), "
            f"{result['region_moves']} region move(s); chart and CSV {result['files']}"
        )


def weekly(demo: Demo) -> None:
    with step(f"{demo.clock:%H:%M} weekly_digest: the Monday digest (events/weekly_digest/weekly.json)"):
        result = demo.invoke("weekly_digest", event("weekly_digest/weekly.json"), "weekly")
        print(
            f"   {result['instances']} GPU machines, {result['idle_gpu_hours']:.0f} idle GPU-hours, "
            f"${result['waste_usd']:,.0f} wasted; chart {result['chart_file']}; owners told {result['owners_told']}"
        )


def organization(demo: Demo, member: accounts.Member) -> bool:
    """The member account: its own sweep warns ivy, whose Stop button goes through the hub to the member's
    worker; its weekly digest hands its week to the hub, whose organization digest shows both accounts."""
    with step(
        f"{demo.clock:%H:%M} idle_stopper in member account {accounts.MEMBER} ({accounts.REGION}): its own sweep"
    ):
        result = demo.invoke("idle_stopper", event("idle_stopper/sweep.json"), "sweep", member)
        for d in result["regions"][accounts.REGION]["decisions"]:
            print(f"   {'ivy-train':<20} {d['action']:<14} {d['reason']}")
            demo.timeline.append([f"{demo.clock:%H:%M}", "ivy-train", accounts.REGION, d["action"], d["reason"]])
    press(demo, member.machine, "costguard.stop_now", "U0IVY", "ivy", member=member)
    state = member.client("ec2").describe_instances(InstanceIds=[member.machine])["Reservations"][0]["Instances"][0]
    stopped = state["State"]["Name"] in ("stopping", "stopped")
    print(f"   ivy-train in {accounts.MEMBER} is now {state['State']['Name']}")
    demo.clock += timedelta(minutes=5)
    with step(f"{demo.clock:%H:%M} weekly_digest in member account {accounts.MEMBER}: its week, handed to the hub"):
        demo.account.set_env(ACCOUNT_LABEL="training")
        load_handler("weekly_digest")._settings.cache_clear()
        result = demo.invoke("weekly_digest", event("weekly_digest/weekly.json"), "weekly", member)
        demo.account.set_env(ACCOUNT_LABEL="research")
        load_handler("weekly_digest")._settings.cache_clear()
        print(
            f"   {result['idle_gpu_hours']:.0f} idle GPU-hours, ${result['waste_usd']:,.0f} wasted; "
            f"week handed to the hub: {result['handed_over']}"
        )
    with step(f"{demo.clock:%H:%M} organization_digest at the hub (events/organization_digest/weekly.json)"):
        result = demo.invoke("organization_digest", event("organization_digest/weekly.json"), "weekly")
        print(
            f"   accounts {result['accounts']}, missing {result['missing']}: {result['idle_gpu_hours']:.0f} idle "
            f"GPU-hours, ${result['waste_usd']:,.0f} wasted across the organization"
        )
    # The story the demo tells, or it fails: a click through the hub stopped the member's machine, and the
    # organization's digest has both accounts and names the one that never reported.
    return stopped and set(result["accounts"]) == {HUB, accounts.MEMBER} and result["missing"] == [accounts.SILENT]


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


def main() -> int:
    transcript = Transcript(sys.stdout)
    sys.stdout = transcript
    demo = Demo()
    try:
        print("costguard demo: an emulated AWS account (moto on 127.0.0.1) and a local Slack stand-in")
        with step("Seeding the ML fleet"):
            seeded = fleet.seed(demo.client, demo.account.gaps, demo.t0)
            quinn = grouped.seed(demo.client, demo.slack.users, demo.t0)
            hourly = fleet.seed_week(demo.client, seeded, demo.t0)
            nightly_run = learned.seed(demo.client, demo.account.gaps, seeded, demo.t0)  # demo/learned.py
            demo.account.set_env(SHORTEST_STOP_MINUTES=learned.SHORTEST_STOP_MINUTES)
            history = sum(len(v) for v in demo.account.gaps.trail.values())
            print(
                f"   {len(seeded.machines) + len(seeded.asg_instances)} instances in {fleet.HOME} and {fleet.OTHER}, "
                f"4 h of CPU and GPU metrics up to {demo.t0:%H:%M} UTC and {hourly:,} hourly points before, "
                f"{history} launches in CloudTrail history"
            )
        demo.clock = demo.t0 - timedelta(minutes=45)
        owner_tagging(demo, seeded)
        idle_stopping(demo, seeded, lambda: grouped.keep_the_second(partial(press, demo), quinn))
        demo.clock = demo.t0 + timedelta(minutes=5)
        press(demo, seeded.named("bob-notebook").instance_id, "costguard.start", "U0BOB", "bob")
        learned.start_scene(demo, lambda: print_decisions_of(demo, seeded), nightly_run)  # demo/learned.py
        sagemaker.scene(demo, demo.t0, step)  # a notebook instance stopped, a zombie endpoint warned
        billing(demo, seeded)
        with step(f"Several accounts: member account {accounts.MEMBER} joins the hub's Slack app"):
            member = accounts.join(demo.account, Runtime.current(), demo.t0)
            print(f"   ivy-train ({accounts.MACHINE_TYPE}) in {accounts.REGION}, idle for three days")
        weekly(demo)
        if not organization(demo, member):
            print("\n== Several accounts: the member's stop or the organization digest did not happen as told")
            return 1
        deep_dive(demo, seeded)

        rows = fleet_rows(demo, seeded, member)
        print("\n== The fleet at the end")
        for row in rows:
            print(f"   {row[0]:<20} {row[2]:<10} {row[3]:<13} {row[4]:<8} Owner={row[5]:<20} {row[7]}")
        print(f"\n== Slack: {len(demo.slack.messages)} message(s)")
        for message in demo.slack.messages:
            where = "DM " + message.channel if message.direct else message.channel
            print(f"   [{where}] {message.text}")
        posted = [m.text + json.dumps(m.blocks) for m in demo.slack.messages]
        carrying = [p for p in posted if "re-authenticate" in p]
        raw = [p for p in carrying if "<!channel>" in p or "<https://example.com" in p]
        print(
            f"\n== The hostile Owner tag {fleet.HOSTILE_OWNER!r}: in {len(carrying)} message(s), "
            + (f"RAW in {len(raw)}: it would ping the channel" if raw else "escaped in every one (pings nobody)")
        )
        if raw or not carrying:
            return 1
        if demo.slack.refused:  # testing/blockkit.py: what Slack would have refused, and why
            print("\n== Slack would refuse:\n" + "\n".join(f"   {r}" for r in demo.slack.refused))
            return 1
        print(
            f"== Block Kit: none of the {len(demo.slack.messages)} messages (and their edits) refused by Slack's rules"
        )

        sections = [
            render.Section("The story, scene by scene", render.story(transcript.text())),
            render.Section(
                "The fleet at the end",
                render.table(
                    [
                        "name",
                        "instance",
                        "region",
                        "type",
                        "state",
                        "Owner",
                        "owner-source",
                        "costguard state",
                        "story",
                    ],
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
        (OUT / "index.html").write_text(
            render.page("costguard demo", sections, demo.slack.messages, USERS, uploads=demo.slack.files)
        )
        # Every message as Slack received it, for comparing two runs of the demo (text and blocks).
        (OUT / "messages.json").write_text(json.dumps([asdict(m) for m in demo.slack.messages], indent=1))
        print(f"\nHTML: {OUT / 'index.html'}   Lambda logs: {OUT / 'lambda-logs.jsonl'}")
        print(f"Calls answered by testing/aws_gaps.py instead of moto: {sorted(set(demo.account.gaps.answered))}")
        print(
            f"The handlers waited {demo.time.waited:.0f} s ({demo.time.waits} waits: activity checks, Slack's pace) "
            "on the demo's clock, none on the wall clock"
        )
        return 0
    finally:
        demo.close()
        sys.stdout = transcript.shown


if __name__ == "__main__":
    sys.exit(main())
