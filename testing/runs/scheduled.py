"""The deep dive over a payer account's quarter and the organization digest at a hub (testing/worlds/
scheduled.py), each handler whole in a fresh process against testing/aws/scheduled.py and the Slack
stand-in: measures, and calls by operation against a floor. tests/integration/test_scheduled_calls.py
holds the calls to the floor; bench/scheduled.py measures them at 0 and 30 ms a call."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from testing.aws.costexplorer import PAGE as CE_PAGE
from testing.aws.scheduled import ANOMALY_PAGE, ScheduledStandIn
from testing.aws.sqs import BATCH as SQS_BATCH
from testing.runs.handler import TOKEN, lambda_env, measured, run_handler
from testing.slack_standin import RateLimits, SlackStandIn
from testing.worlds.scheduled import ACCELERATED, OrganizationWorld, QuarterWorld

QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/costguard-figures"
GROUPINGS = (
    ("LINKED_ACCOUNT",), ("REGION",), ("INSTANCE_TYPE",), ("TAG:Owner",), ("TAG:Team",), ("INSTANCE_TYPE", "REGION"),
)  # fmt: skip


def deep_dive_floor(world: QuarterWorld) -> dict[str, int]:
    """What any deep dive of this quarter needs: Cost Explorer's pages of each of the six groupings (its
    1,000 groups a page), one anomaly monitor check and the findings' pages, one Pricing query per
    accelerated type that ran in a governed region (every region's price in one answer), the four
    commitment reports, the Reserved Instances of each governed region and the Savings Plans, the
    weekly records (one Query), and the post with its chart and CSV, each claimed and marked done."""
    pages = sum(math.ceil(len(world.rows(keys)) * len(world.months) / CE_PAGE) for keys in GROUPINGS)
    priced = {t for t in ACCELERATED if set(world.type_regions(t)) & set(world.governed)}
    return {
        "secretsmanager:GetSecretValue": 1,
        "ce:GetCostAndUsage": pages,
        "ce:GetAnomalyMonitors": 1,
        "ce:GetAnomalies": max(1, math.ceil(world.anomalies / ANOMALY_PAGE)),
        "pricing:GetProducts": len(priced),
        "ce:GetReservationUtilization": 1,
        "ce:GetReservationCoverage": 1,
        "ce:GetSavingsPlansUtilization": 1,
        "ce:GetSavingsPlansCoverage": 1,
        "ec2:DescribeReservedInstances": len(world.governed),
        "savingsplans:DescribeSavingsPlans": 1,
        "dynamodb:Query": 1,
        "dynamodb:PutItem": 3,
        "dynamodb:UpdateItem": 3,
        "slack:chat.postMessage": 1,
        "slack:files.getUploadURLExternal": 2,
        "slack:upload": 2,
        "slack:files.completeUploadExternal": 2,
    }


def organization_floor(world: OrganizationWorld) -> dict[str, int]:
    """What any organization digest of this queue needs: every letter received 10 a call and one empty
    long poll to know the queue is read, each kept week written on its own (a conditional write: an
    older week never replaces a newer), the kept letters deleted 10 a call (one DeleteMessageBatch per ten,
    whatever receive they came in), the expected accounts' weeks read back 100 a call, and the post with its
    chart, each claimed and marked done."""
    letters = world.hand_offs()
    batches = [letters[k : k + SQS_BATCH] for k in range(0, len(letters), SQS_BATCH)]
    kept = sum(1 for letter in letters if not world.refused(letter))
    return {
        "secretsmanager:GetSecretValue": 1,
        "sqs:ReceiveMessage": len(batches) + 1,
        "sqs:DeleteMessageBatch": math.ceil(kept / SQS_BATCH),
        "dynamodb:PutItem": kept + 2,
        "dynamodb:UpdateItem": 2,
        "dynamodb:BatchGetItem": math.ceil(len(world.accounts) / 100),
        "slack:chat.postMessage": 1,
        "slack:files.getUploadURLExternal": 1,
        "slack:upload": 1,
        "slack:files.completeUploadExternal": 1,
    }


def run_deep_dive(latency: float, *, code: Path | None = None, profile: str = "") -> dict[str, Any]:
    world = QuarterWorld()
    aws = ScheduledStandIn(quarter=world, latency_s=latency, secret={"bot_token": TOKEN})
    aws.start()
    slack = SlackStandIn(token=TOKEN, latency_s=latency, limits=RateLimits()).start()
    try:
        env = lambda_env("deep_dive", aws.url, slack, world.now.isoformat(), world.governed)
        wall, child = run_handler("deep_dive", "deep-dive", env, code=code, profile=profile)
        slack.assert_all_accepted()
        answer = child["answer"]
        return {
            "lines": answer["lines"],
            "anomalies": answer["anomalies"],
            "region_moves": answer["region_moves"],
            "csv_bytes": sum(len(f["bytes"]) for f in slack.files if str(f.get("filename", "")).endswith(".csv")),
            **measured(wall, child, aws, slack, deep_dive_floor(world)),
        }
    finally:
        slack.stop()
        aws.stop()


def run_organization(latency: float, *, code: Path | None = None, profile: str = "") -> dict[str, Any]:
    world = OrganizationWorld()
    aws = ScheduledStandIn(organization=world, latency_s=latency, secret={"bot_token": TOKEN})
    aws.start()
    slack = SlackStandIn(token=TOKEN, latency_s=latency, limits=RateLimits()).start()
    try:
        roles = ",".join(f"arn:aws:iam::{a}:role/costguard-weekly-digest" for a in world.accounts)
        hub = {"MemberDigestRoles": roles, "WeeklyDigest": "false"}
        now = world.now.isoformat()
        env = lambda_env("organization_digest", aws.url, slack, now, ("us-east-1",), hub, {"FiguresQueue": QUEUE_URL})
        wall, child = run_handler("organization_digest", "organization", env, code=code, profile=profile)
        slack.assert_all_accepted()
        answer = child["answer"]
        if len(answer["accounts"]) != world.members or answer["refused"] != 2 or len(aws.sqs.messages) != 2:
            raise RuntimeError(f"the organization digest read the queue wrong: {answer}, {len(aws.sqs.messages)} left")
        return {
            "accounts": len(answer["accounts"]),
            "refused": answer["refused"],
            **measured(wall, child, aws, slack, organization_floor(world)),
        }
    finally:
        slack.stop()
        aws.stop()
