"""`make demo`: costguard's governance cycle against a local emulated AWS account and Slack.

Starts moto's server on 127.0.0.1 behind the gap proxy (demo/aws_gaps.py), the Slack stand-in,
seeds the fleet (demo/fleet.py), runs each function's handler in-process on the payloads in
events/, with the real boto3 and slack-sdk clients, then prints a summary and writes
demo-output/index.html with every Slack message as Slack would show it.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from costguard.observability import logger
from demo import fleet, render
from demo.account import LocalAccount
from tests.conftest import LambdaContext, load_handler

OUT = Path("demo-output")
ALERTS = "#ml-costs"
DIGEST = "#ml-weekly"
USERS = {
    "alice@example.com": "U0ALICE",
    "bob@example.com": "U0BOB",
    "carol@example.com": "U0CAROL",
    "dave@example.com": "U0DAVE",
    "erin@example.com": "U0ERIN",
    "frank@example.com": "U0FRANK",
    "grace@example.com": "U0GRACE",
}


class Demo:
    def __init__(self) -> None:
        OUT.mkdir(exist_ok=True)
        self.account = LocalAccount(USERS)
        self.gaps = self.account.gaps
        self.slack = self.account.slack
        self.client = self.account.client
        self.account.activate(
            ALERTS_CHANNEL=ALERTS, DIGEST_CHANNEL=DIGEST, GOVERNED_REGIONS=f"{fleet.HOME},{fleet.OTHER}"
        )
        self.log = (OUT / "lambda-logs.jsonl").open("w")
        handler = logger.registered_handler
        if hasattr(handler, "setStream"):
            handler.setStream(self.log)  # Lambda's stdout goes to a file, the terminal keeps the story
        self.invocations: list[tuple[str, str, float]] = []

    def invoke(self, function: str, event: Any) -> Any:
        handler = load_handler(function).lambda_handler
        started = time.perf_counter()
        with contextlib.redirect_stdout(self.log):
            result = handler(event, LambdaContext())
        self.invocations.append(
            (function, event.get("detail-type") or json.dumps(event), time.perf_counter() - started)
        )
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


def instance_rows(demo: Demo, seeded: fleet.SeededFleet) -> list[list[str]]:
    names = seeded.by_id()
    rows = []
    for region in (fleet.HOME, fleet.OTHER):
        for reservation in demo.client("ec2", region).describe_instances()["Reservations"]:
            for raw in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in raw.get("Tags", [])}
                machine = names.get(raw["InstanceId"])
                name = machine.name if machine else tags.get("Name", f"{fleet.ASG_NAME} member")
                rows.append(
                    [
                        name,
                        raw["InstanceId"],
                        region,
                        raw["InstanceType"],
                        raw["State"]["Name"],
                        tags.get("Owner", "—"),
                        tags.get("costguard:owner-source", "—"),
                        tags.get("costguard:created-by", "—"),
                    ]
                )
    return rows


def main() -> int:
    demo = Demo()
    try:
        print("costguard demo: an emulated AWS account (moto on 127.0.0.1) and a local Slack stand-in")
        with step("Seeding the ML fleet"):
            seeded = fleet.seed(demo.client, demo.gaps)
            count = len(seeded.machines) + len(seeded.asg_instances)
            history = sum(len(v) for v in demo.gaps.trail.values())
            print(
                f"   {count} instances in {fleet.HOME} and {fleet.OTHER}, 3 h of CPU and GPU metrics, "
                f"{history} launches in CloudTrail history"
            )

        with step("owner_tagger: real-time RunInstances events (events/owner_tagger/*.json)"):
            for machine in seeded.machines:
                if machine.launch_event:
                    result = demo.invoke("owner_tagger", fleet.launch_event(machine))
                    print(f"   {machine.name:<14} {machine.launch_event:<36} → {result['by_source']}")
            for instance_id in seeded.asg_instances:
                event = fleet.launch_event(
                    fleet.Machine(
                        "asg", fleet.HOME, "g5.2xlarge", "", "runinstances-autoscaling.json", instance_id=instance_id
                    )
                )
                result = demo.invoke("owner_tagger", event)
                print(
                    f"   {fleet.ASG_NAME + ' member':<14} {'runinstances-autoscaling.json':<36} → {result['by_source']}"
                )

        with step("owner_tagger: daily backfill over every governed region (events/owner_tagger/backfill.json)"):
            result = demo.invoke("owner_tagger", json.loads((fleet.EVENTS / "owner_tagger/backfill.json").read_text()))
            for region, summary in result["regions"].items():
                print(
                    f"   {region}: {summary['instances']} untagged found, by source {summary['by_source']}, "
                    f"{summary['volumes_tagged']} volumes tagged, {summary['cloudtrail_pages']} CloudTrail page(s)"
                )

        rows = instance_rows(demo, seeded)
        print("\n== The fleet after tagging")
        for row in rows:
            print(f"   {row[0]:<20} {row[2]:<10} {row[3]:<13} Owner={row[5]:<20} source={row[6]}")
        print(f"\n== Slack: {len(demo.slack.messages)} message(s)")
        for message in demo.slack.messages:
            where = "DM " + message.channel if message.direct else message.channel
            print(f"   [{where}] {message.text}")

        sections = [
            render.Section(
                "Owner tags after the run",
                render.table(
                    ["name", "instance", "region", "type", "state", "Owner", "owner-source", "created-by"], rows
                ),
            ),
            render.Section(
                "Invocations",
                render.table(
                    ["function", "event", "seconds"], [[f, e[:80], f"{s:.2f}"] for f, e, s in demo.invocations]
                ),
            ),
        ]
        (OUT / "index.html").write_text(render.page("costguard demo", sections, demo.slack.messages, USERS))
        print(f"\nHTML: {OUT / 'index.html'}   Lambda logs: {OUT / 'lambda-logs.jsonl'}")
        print(f"Calls answered by demo/aws_gaps.py instead of moto: {sorted(set(demo.gaps.answered))}")
        return 0
    finally:
        demo.close()


if __name__ == "__main__":
    sys.exit(main())
