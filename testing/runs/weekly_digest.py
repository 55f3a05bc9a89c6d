"""The whole weekly digest handler over a synthetic account (testing/worlds/digest.py) against the AWS
stand-in (testing/aws/digest.py) and the Slack stand-in with Slack's limits: its measures, and its calls
by operation against their floor (what any implementation needs, derived from the account).
tests/integration/test_digest_calls.py holds the calls to the floor; bench/digest_whole.py measures it at
1,000 and 10,000 machines."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from testing.aws.digest import DigestStandIn
from testing.runs.handler import TOKEN, lambda_env, measured, run_handler
from testing.slack_standin import RateLimits, SlackStandIn
from testing.worlds.digest import REGION, DigestWorld

HUB_QUEUE = "arn:aws:sqs:us-east-1:999999999999:costguard-figures"
# AWS's per-call limits the floor is made of.
DESCRIBE_PAGE, LIST_METRICS_PAGE, MAX_QUERIES, MAX_DATAPOINTS = 1_000, 500, 500, 100_800
SSM_PAGE, BATCH_GET, BATCH_WRITE, SLACK_USERS_PAGE = 50, 100, 25, 200


def digest_env(endpoint: str, slack: SlackStandIn, world: DigestWorld) -> dict[str, str]:
    """The weekly digest's Lambda environment with the template's defaults (activity check on, owner
    digests on), handing its week to a hub (which tells the owners: this account does not)."""
    hub = {"HubFiguresQueueArn": HUB_QUEUE, "AccountLabel": "training"}
    return lambda_env("weekly_digest", endpoint, slack, world.now.isoformat(), (REGION,), hub)


def floor(
    world: DigestWorld, owners_told: int, priced: int, spot_types: int, *, replies: int = 0, owner_parts: int = 0
) -> dict[str, int]:
    """The calls any weekly digest of this account needs, by operation (one region):

    - one GetSecretValue; DescribeInstances pages of 1,000 live machines;
    - ListMetrics pages of 500 over the GPU series the agents publish (one walk for the region);
    - GetMetricData: every series read (CPU, the busiest core, and each GPU's Maximum and Average), as
      many a call as its 500 queries and 100,800 datapoints allow over the fortnight's hourly points; the
      busiest core is asked of every machine, as the sweep asks it (which machines run the agent is
      known only by asking, and a ListMetrics walk to find out would cost more than it saves);
    - one DescribeSpotPriceHistory per instance type asked (every zone in one answer), one GetProducts
      per type priced (the fleet's, and those advice compares them with): each asked once;
    - DescribeInstanceInformation: 50 a page, over the managed machines (one unfiltered walk) or the
      running ones (filtered by id), whichever is fewer; one GetServiceSetting (Default Host Management
      Configuration) where a running machine is not managed;
    - the ledger's week and the 7 days before it (the stops still in force at the week's start): one Query
      per day partition (15: fourteen days and today); the sweeps' prices of the machines costguard kept
      stopped (`worth#<day>`): one Query per day partition (9: the day before the week, for the price a stop
      still in force starts it at, seven days and today); where the digest before this one ended (one Query);
    - Cost Explorer: the four commitment reports and one daily cost; one DescribeReservedInstances per
      region, one DescribeSavingsPlans;
    - the bill the idle hours are priced on (aws/billing.py): one DescribeCapacityReservations per region,
      the plans' recent use (GetSavingsPlansUtilizationDetails) and spill (a second GetSavingsPlansCoverage:
      the last two days, day by day, not the week's);
    - one PutDashboard per team per region;
    - the week kept (one UpdateItem, which leaves where a posted digest ended) and handed over (one SendMessage),
      and the owners' weeks before it (one SendMessage a part of 64 KB); where this digest ended, once posted
      (one UpdateItem);
    - each Slack delivery claimed and marked done (a PutItem and an UpdateItem each: the channel post,
      its chart, each reply in its thread, each owner told), so that a retry sends nothing twice;
    - owners' Slack ids, where this account tells its owners itself (no hub): BatchGetItem 100 a call, and
      (the first week) BatchWriteItem 25 a call; with a hub, the hub asks;
    - Slack: users.list pages of 200 (the first week, without a hub), one post per message, three calls per
      upload.
    """
    live = len(world.machines)
    running = [m for m in world.machines if m.state == "running"]
    managed = [m for m in running if m.managed]
    series = sum(2 + 2 * m.gpus * m.telemetry for m in world.machines)
    per_call = min(MAX_QUERIES, MAX_DATAPOINTS // world.slots)
    owners = len(world.owners_with_machines()) if owners_told else 0  # looked up only to tell them here
    deliveries = 2 + replies + owners_told
    return {
        "secretsmanager:GetSecretValue": 1,
        "ec2:DescribeInstances": math.ceil(live / DESCRIBE_PAGE),
        "cloudwatch:ListMetrics": math.ceil(world.listed_series / LIST_METRICS_PAGE),
        "cloudwatch:GetMetricData": math.ceil(series / per_call),
        "ec2:DescribeSpotPriceHistory": spot_types,
        "pricing:GetProducts": priced,
        "ssm:DescribeInstanceInformation": math.ceil(min(len(managed), len(running)) / SSM_PAGE),
        "ssm:GetServiceSetting": 1 if len(managed) < len(running) else 0,  # why the unmanaged cannot answer
        "dynamodb:Query": 15 + 9 + 1,
        "ce:GetReservationUtilization": 1,
        "ce:GetReservationCoverage": 1,
        "ce:GetSavingsPlansUtilization": 1,
        "ce:GetSavingsPlansCoverage": 2,
        "ce:GetSavingsPlansUtilizationDetails": 1,
        "ec2:DescribeCapacityReservations": 1,
        "ce:GetCostAndUsage": 1,
        "ec2:DescribeReservedInstances": 1,
        "savingsplans:DescribeSavingsPlans": 1,
        "cloudwatch:PutDashboard": len({m.team for m in world.machines}),
        "dynamodb:PutItem": deliveries,
        "dynamodb:UpdateItem": deliveries + 2,
        "dynamodb:BatchGetItem": math.ceil(owners / BATCH_GET),
        "dynamodb:BatchWriteItem": math.ceil(owners / BATCH_WRITE),
        "sqs:SendMessage": 1 + owner_parts,
        # the SageMaker part of the digest, in an account without SageMaker: one empty list of each kind
        "sagemaker:ListNotebookInstances": 1,
        "sagemaker:ListEndpoints": 1,
        "sagemaker:ListDomains": 1,
        "sagemaker:ListApps": 1,
        "slack:users.list": math.ceil(len(world.slack_users) / SLACK_USERS_PAGE) if owners_told else 0,
        "slack:chat.postMessage": 1 + replies + owners_told,
        "slack:files.getUploadURLExternal": 1,
        "slack:upload": 1,
        "slack:files.completeUploadExternal": 1,
    }


def run_weekly(
    n: int, latency: float, *, profile: str = "", keep: Path | None = None, code: Path | None = None
) -> dict[str, Any]:
    """One weekly digest of an n-machine account in a fresh process (this tree's code, or `code`'s
    library and handlers); its measures and call counts."""
    world = DigestWorld(n)
    aws = DigestStandIn(world, latency_s=latency, secret={"bot_token": TOKEN})
    aws.start()
    slack = SlackStandIn(users=world.slack_users, token=TOKEN, latency_s=latency, limits=RateLimits()).start()
    try:
        env = digest_env(aws.url, slack, world)
        wall, child = run_handler("weekly_digest", f"weekly-{n}", env, profile=profile, keep=keep, code=code)
        slack.assert_all_accepted()
        answer = child["answer"]
        limit = floor(
            world,
            len(answer["owners_told"]),
            len(aws.priced),
            len(aws.spot_asked),
            replies=answer["replies"],
            owner_parts=answer["owner_parts"],
        )
        return {
            "instances": n,
            **measured(wall, child, aws, slack, limit),
            "owners_told": len(answer["owners_told"]),
            "owners_handed": answer["owners_handed"],
            "replies": answer["replies"],
            "owners_quiet": len(answer["owners_quiet"]),
            "owners_unreachable": len(answer["owners_unreachable"]),
            "idle_gpu_hours": answer["idle_gpu_hours"],
            "waste_usd": answer["waste_usd"],
        }
    finally:
        slack.stop()
        aws.stop()
