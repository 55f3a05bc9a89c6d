"""owner_tagger at scale: API calls and wall time of one launch and of a backfill over N instances.

Runs against moto's server behind the demo's gap proxy (which answers CloudTrail LookupEvents from a
seeded history), with the real handler, boto3 and the Slack stand-in.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from bench.common import CallCounter, cold_import_seconds, save
from costguard.aws import ClientFactory
from costguard.runtime import Runtime
from costguard.settings import Settings
from demo.__main__ import free_port
from demo.aws_gaps import AwsGaps, GapProxy
from demo.fleet import AMI, Machine, iam_user, launch_event, launch_record
from demo.slack_standin import SlackStandIn
from demo.template_resources import create_state_table
from tests.conftest import LambdaContext, load_handler

REGION = "us-east-1"


def run(n_backfill: int = 200, people: int = 20) -> dict[str, Any]:
    moto_port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
    server.start()
    gaps = AwsGaps()
    proxy = GapProxy(gaps, moto_port).start()
    slack = SlackStandIn().start()
    try:
        os.environ.update(
            AWS_ENDPOINT_URL=proxy.url,
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_DEFAULT_REGION=REGION,
            AWS_REGION=REGION,
            COSTGUARD_MODE="enforce",
            SLACK_SECRET_NAME="costguard/slack",
            ALERTS_CHANNEL="C0ALERTS",
            STATE_TABLE="state",
            GOVERNED_REGIONS=REGION,
            SLACK_API_URL=slack.api_url,
            POWERTOOLS_LOG_LEVEL="ERROR",
            POWERTOOLS_METRICS_DISABLED="true",
        )
        admin = boto3.session.Session()
        create_state_table(admin.client("dynamodb", region_name=REGION), "state")
        admin.client("secretsmanager", region_name=REGION).create_secret(
            Name="costguard/slack", SecretString=json.dumps({"bot_token": slack.token})
        )
        ec2 = admin.client("ec2", region_name=REGION)

        counter = CallCounter()
        runtime = Runtime(Settings.from_env(), ClientFactory(counter.session(), default_region=REGION))
        handler = load_handler("owner_tagger").lambda_handler

        # One person launching one GPU instance: the real-time path.
        instance_id = ec2.run_instances(ImageId=AMI, MinCount=1, MaxCount=1, InstanceType="g5.xlarge")["Instances"][0][
            "InstanceId"
        ]
        event = launch_event(
            Machine("one", REGION, "g5.xlarge", "", "runinstances-iam-user.json", instance_id=instance_id)
        )
        runtime.slack_credentials()  # the secret is fetched once per container; not part of a launch
        counter.reset()
        started = time.perf_counter()
        handler(event, LambdaContext(), runtime=runtime)
        launch = {"seconds": round(time.perf_counter() - started, 3), "api_calls": counter.reset()}

        # N untagged instances launched by `people` different people, all in CloudTrail's history.
        now = datetime.now(UTC)
        ids = [
            i["InstanceId"]
            for i in ec2.run_instances(ImageId=AMI, MinCount=n_backfill, MaxCount=n_backfill, InstanceType="g5.xlarge")[
                "Instances"
            ]
        ]
        for k, iid in enumerate(ids):
            machine = Machine(f"m{k}", REGION, "g5.xlarge", "", instance_id=iid)
            gaps.add_launch(
                REGION, launch_record(machine, iam_user(f"user{k % people}"), now - timedelta(minutes=2, seconds=k))
            )
        started = time.perf_counter()
        result = handler({"costguard": "backfill"}, LambdaContext(), runtime=runtime)
        backfill = {
            "instances": n_backfill,
            "people": people,
            "seconds": round(time.perf_counter() - started, 2),
            "api_calls": counter.reset(),
            "summary": result["regions"][REGION]["by_source"],
        }
        floor = {
            "ec2:DescribeInstances": 1,
            "cloudtrail:LookupEvents": -(-n_backfill // 50),
            "ec2:CreateTags (one per distinct owner, instances + volumes)": 2 * people,
            "ec2:DescribeVolumes": 1,
            "dynamodb:BatchWriteItem (ledger, 25 items a call)": -(-n_backfill // 25),
        }
        return {
            "launch": launch,
            "backfill": backfill,
            "backfill_floor": floor,
            "cold_import": cold_import_seconds("owner_tagger"),
        }
    finally:
        slack.stop()
        proxy.stop()
        server.stop()


def main() -> dict[str, Any]:
    result = run()
    path = save("owner_tagger", result)
    print(f"owner_tagger ({path.relative_to(path.parents[2])})")
    print(f"  one launch: {result['launch']['seconds']} s, calls {result['launch']['api_calls']}")
    b = result["backfill"]
    print(f"  backfill of {b['instances']} instances from {b['people']} people: {b['seconds']} s")
    for op, count in b["api_calls"].items():
        print(f"    {op:<40} {count}")
    print(f"  floor: {result['backfill_floor']}")
    print(f"  cold import of the handler: {result['cold_import']}")
    return result
