"""The other scheduled digests as Lambda runs them, each handler whole in a fresh interpreter, at its scale:
`deep_dive` over a payer account's quarter (bench/scheduled_worlds.py: 300 accounts, 120 instance types
in 16 regions, 1,500 owners, 60 teams, Cost Anomaly Detection on, three governed regions), and
`organization_digest` at a hub whose figures queue holds 100 accounts' weeks and two letters to refuse.

The same measures as bench/digest_whole.py (wall at 0 and 30 ms a call, CPU, peak RSS, calls by
operation against a floor), the same stand-ins (bench/scheduled_standin.py; the Slack stand-in with
Slack's limits). `python -m bench.scheduled [--latency S] [--commit REV] [--save NAME]`.
"""

from __future__ import annotations

import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import ROOT, save
from bench.digest_whole import TOKEN, lambda_env, load, measured, run_handler, tree_of
from bench.scheduled_standin import ANOMALY_PAGE, CE_PAGE, SQS_BATCH, ScheduledStandIn
from bench.scheduled_worlds import ACCELERATED, OrganizationWorld, QuarterWorld
from testing.slack_standin import RateLimits, SlackStandIn

LATENCIES = (0.0, 0.03)
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
        env = lambda_env(aws.url, slack, world.now.isoformat(), world.governed)
        wall, child = run_handler("deep_dive", "deep-dive", env, code=code, profile=profile)
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
        env = {
            **lambda_env(aws.url, slack, world.now.isoformat(), ("us-east-1",)),
            "FIGURES_QUEUE_URL": QUEUE_URL,
            "MEMBER_DIGEST_ROLES": ",".join(f"arn:aws:iam::{a}:role/costguard-weekly-digest" for a in world.accounts),
            "HUB_WEEKLY_DIGEST": "false",
        }
        wall, child = run_handler("organization_digest", "organization", env, code=code, profile=profile)
        answer = child["answer"]
        if len(answer["accounts"]) != world.members or answer["refused"] != 2 or len(aws.queue) != 2:
            raise RuntimeError(f"the organization digest read the queue wrong: {answer}, {len(aws.queue)} left")
        return {
            "accounts": len(answer["accounts"]),
            "refused": answer["refused"],
            **measured(wall, child, aws, slack, organization_floor(world)),
        }
    finally:
        slack.stop()
        aws.stop()


def show(name: str, run: dict[str, Any]) -> None:
    over = {op: c for op, c in run["calls"].items() if c["made"] != c["floor"]}
    print(
        f"  {name} at {run['latency_ms']} ms: wall {run['wall_s']} s, CPU {run['cpu_s']} s, peak {run['peak_rss_mb']} "
        f"MB, AWS calls {run['aws_calls']} (floor {run['aws_floor']}, {run['aws_vs_floor']}x); off the floor: "
        + ", ".join(f"{op} {c['made']}/{c['floor']}" for op, c in over.items())
    )


def main(latencies: tuple[float, ...] = LATENCIES, code: Path | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"deep_dive": [], "organization_digest": []}
    for latency in latencies:
        for name, run in (("deep_dive", run_deep_dive), ("organization_digest", run_organization)):
            before = load()
            result = run(latency, code=code)
            result["load_before"], result["load_after"] = before, load()
            show(name, result)
            out[name].append(result)
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    options = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    chosen = (float(options["--latency"]),) if "--latency" in options else LATENCIES
    with tempfile.TemporaryDirectory() as tmp:
        commit = options.get("--commit")
        tree = tree_of(commit, Path(tmp)) if commit else None
        result = main(chosen, tree)
        if commit:
            result["code"] = subprocess.run(
                ["git", "rev-parse", commit], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.strip()
        if "--save" in options:
            print(f"  saved {save(options['--save'], result)}")
