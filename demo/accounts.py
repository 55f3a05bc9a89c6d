"""The demo's second account: a member of the organization behind the hub's one Slack app.

moto serves it as account 111122223333 (STS AssumeRole credentials from the local endpoint); its
own costguard runs with its own runtime and role, in eu-west-1. One idle training box lives there.
moto evaluates no queue policy across accounts, so the two cross-account sends (the hub's receiver to
the member's click queue, the member's digest to the hub's figures queue) use the owning account's
credentials here, as the queue policies in template.yaml let exactly those roles do in AWS.
"""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import datetime, timedelta
from typing import Any

import boto3
import botocore.session
from botocore.exceptions import ClientError

from costguard.aws.clients import GLOBAL_ENDPOINT_REGION, ClientFactory
from costguard.aws.pricing import BUNDLED_USD_PER_HOUR
from costguard.runtime import Runtime
from demo import fleet
from demo.learned import quiet_check
from testing import moto_fixes
from testing.account import LocalAccount
from testing.handlers import LambdaContext
from testing.launches import AMI
from testing.template import install_costguard

MEMBER = "111122223333"
SILENT = "444455556666"  # listed at the hub, never deployed: the organization digest names it
REGION = "eu-west-1"
MACHINE_TYPE = "g5.12xlarge"
OWNER = "ivy@example.com"
DIGEST_ROLE = f"arn:aws:iam::{MEMBER}:role/costguard-training-WeeklyDigestFunctionRole-DEMO"
SILENT_ROLE = f"arn:aws:iam::{SILENT}:role/costguard-sandbox-WeeklyDigestFunctionRole-DEMO"


class MemberContext(LambdaContext):
    """The Lambda context of a function deployed in the member account."""

    invoked_function_arn = f"arn:aws:lambda:{REGION}:{MEMBER}:function:costguard-member"


class NoCostExplorer:
    """Cost Explorer as a member account usually sees it: the bill lives in the management account."""

    def __getattr__(self, operation: str) -> Any:
        def denied(**_: Any) -> Any:
            error = {"Error": {"Code": "AccessDeniedException", "Message": "linked account"}}
            raise ClientError(error, operation)  # type: ignore[arg-type]

        return denied


@dataclasses.dataclass
class Member:
    runtime: Runtime
    session: boto3.session.Session
    endpoint: str
    click_queue: str
    machine: str

    def client(self, service: str, region: str = REGION) -> Any:
        """A client of the member account, as its operator would have (the demo looks with it)."""
        return self.session.client(service, region_name=region, endpoint_url=self.endpoint)  # type: ignore[call-overload]


def join(account: LocalAccount, hub: Runtime, now: datetime, core: botocore.session.Session | None = None) -> Member:
    """The member account, its costguard, its idle machine and a week of its metrics; `core`: the botocore
    session its clients are made from (the demo's, with the service models it already loaded)."""
    creds = account.client("sts").assume_role(
        RoleArn=f"arn:aws:iam::{MEMBER}:role/costguard-deploy", RoleSessionName="demo"
    )["Credentials"]
    session = boto3.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
        region_name=REGION,
        botocore_session=core,
    )
    url = account.proxy.url

    def client(service: str, region: str = REGION) -> Any:
        return session.client(service, region_name=region, endpoint_url=url)  # type: ignore[call-overload]

    install_costguard(
        client("dynamodb"),
        client("secretsmanager"),
        {"STATE_TABLE": hub.settings.state_table, "SLACK_SECRET_NAME": hub.settings.slack_secret_name},
        json.dumps({"bot_token": account.slack.token, "signing_secret": "local"}),
    )
    click_queue = str(client("sqs").create_queue(QueueName="costguard-clicks")["QueueUrl"])
    tags = {"Name": "ivy-train", "Owner": OWNER, "Team": "vision"}
    machine = client("ec2").run_instances(
        ImageId=AMI,
        MinCount=1,
        MaxCount=1,
        InstanceType=MACHINE_TYPE,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
    )["Instances"][0]["InstanceId"]
    moto_fixes.set_launch_time(machine, REGION, now - timedelta(days=3), account=MEMBER)
    account.gaps.prices[(MACHINE_TYPE, REGION)] = BUNDLED_USD_PER_HOUR[MACHINE_TYPE]
    account.gaps.activity[machine] = quiet_check()  # it answers its check: stopped in the story's morning
    _seed_idle(client("cloudwatch"), machine, now)

    settings = dataclasses.replace(
        hub.settings, governed_regions=(REGION,), home_region=REGION, digest_channel="#ml-training-weekly"
    )
    runtime = Runtime(settings, ClientFactory(session, default_region=REGION), slack_pace=0.0)
    runtime.clients._clients[("ce", GLOBAL_ENDPOINT_REGION)] = NoCostExplorer()
    runtime.clients._clients[("sqs", GLOBAL_ENDPOINT_REGION)] = account.client("sqs")  # to the hub's figures queue
    hub.clients._clients[("sqs", REGION)] = client("sqs")  # from the hub's receiver to the member's click queue
    return Member(runtime, session, url, click_queue, machine)


def _seed_idle(cloudwatch: Any, instance_id: str, now: datetime) -> None:
    """Three days of an idle A10G x 4 box: hourly points, then every 5 minutes for the last 4 hours."""
    rng = random.Random(11)
    gpus = fleet.GPUS[MACHINE_TYPE]
    moments = [now - timedelta(hours=k, minutes=30) for k in range(72, 4, -1)]
    moments += [now - timedelta(minutes=5 * k) for k in range(48, 0, -1)]
    ec2, agent = [], []
    for at in moments:
        ec2.append(
            fleet.percent("CPUUtilization", [{"Name": "InstanceId", "Value": instance_id}], at, rng.uniform(0.3, 2))
        )
        agent.append(
            fleet.percent("cpu_usage_active", [{"Name": "InstanceId", "Value": instance_id}], at, rng.uniform(1, 9))
        )
        for index in range(gpus[2]):
            dims = fleet.gpu_dims(instance_id, index, gpus[0], gpus[1])
            agent.append(fleet.percent("nvidia_smi_utilization_gpu", dims, at, round(rng.uniform(0.0, 2.0), 1)))
    for namespace, data in (("AWS/EC2", ec2), ("CWAgent", agent)):
        for start in range(0, len(data), 1000):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 1000])
