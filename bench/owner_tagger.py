"""owner_tagger at scale: API calls and wall time of one launch and of a backfill over N instances.

Runs against moto's server behind the demo's gap proxy (which answers CloudTrail LookupEvents from a
seeded history), with the real handler, boto3 and the Slack stand-in.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import CallCounter, cold_import_seconds, save
from costguard.aws.clients import ClientFactory
from costguard.core.settings import Settings
from costguard.runtime import Runtime
from testing.account import LocalAccount
from testing.handlers import LambdaContext, load_handler
from testing.launches import AMI, iam_user, launch_event, launch_record

REGION = "us-east-1"


def run(n_backfill: int = 200, people: int = 20) -> dict[str, Any]:
    account = LocalAccount()
    try:
        account.activate(POWERTOOLS_METRICS_DISABLED="true")
        gaps = account.gaps
        ec2 = account.client("ec2", REGION)

        counter = CallCounter()
        runtime = Runtime(Settings.from_env(), ClientFactory(counter.session(), default_region=REGION))
        handler = load_handler("owner_tagger").lambda_handler

        # One person launching one GPU instance: the real-time path.
        instance_id = ec2.run_instances(ImageId=AMI, MinCount=1, MaxCount=1, InstanceType="g5.xlarge")["Instances"][0][
            "InstanceId"
        ]
        event = launch_event("runinstances-iam-user.json", instance_id)
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
            record = launch_record(
                instance_id=iid,
                region=REGION,
                instance_type="g5.xlarge",
                identity=iam_user(f"user{k % people}"),
                when=now - timedelta(minutes=2, seconds=k),
                event_id=f"demo-m{k}",
            )
            gaps.add_launch(REGION, record)
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
        account.close()


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
