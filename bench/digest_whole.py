"""The weekly digest as Lambda runs it: the whole `weekly_digest` handler in a fresh interpreter per run
(imports, collection, advice, dashboards, the records and the hand-over, the channel post with its chart
and every owner's direct message), over an account of 1,000 and 10,000 GPU machines (bench/digest_world.py:
a fortnight of hourly CPU and per-GPU metrics, 200 owners, 20 teams, the template's defaults with the
activity check on and a hub to hand the week to).

AWS is bench/digest_standin.py, Slack the Slack stand-in enforcing Slack's limits (Tier 2 and 3 a
minute, one post a second per channel, each refusal a 429 with its Retry-After), both in this process
over HTTP, both answering after the same injected latency (0 and 30 ms a call). Reported per run: wall
time, the child's CPU seconds (imports included) and peak RSS, AWS calls and Slack calls by operation,
and each operation against its floor (`floor`): what any implementation needs, derived from the account.

`python -m bench.digest_whole [N ...] [--latency S] [--commit REV] [--save NAME] [--profile cpu|memory]`
runs chosen sizes, of this tree or of the commit REV (its library and handlers; this tree's account and
stand-ins), and saves bench/results/NAME.json; `make bench` runs them all into digest_whole.json.
bench/results/digest_whole_before.json is the commit before the digest's performance work (issue 27).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from io import BytesIO
from pathlib import Path
from typing import Any

from bench.common import ROOT, save
from bench.digest_standin import DigestStandIn
from bench.digest_world import REGION, DigestWorld
from bench.versus import aws_env
from testing.slack_standin import RateLimits, SlackStandIn

SIZES = (1_000, 10_000)
LATENCIES = (0.0, 0.03)
HUB_QUEUE = "arn:aws:sqs:us-east-1:999999999999:costguard-figures"
TOKEN = "xoxb-bench"
DIGEST_CHANNEL = "C0DIGEST"
# AWS's per-call limits the floor is made of.
DESCRIBE_PAGE, LIST_METRICS_PAGE, MAX_QUERIES, MAX_DATAPOINTS = 1_000, 500, 500, 100_800
SSM_PAGE, BATCH_GET, BATCH_WRITE, SLACK_USERS_PAGE = 50, 100, 25, 200


def lambda_env(endpoint: str, slack: SlackStandIn, now: str, governed: tuple[str, ...]) -> dict[str, str]:
    """What every scheduled function's Lambda environment holds here: the stand-ins, the template's
    defaults, the benchmark's clock."""
    return {
        **aws_env(endpoint),
        "PYTHONPATH": str(ROOT),
        "COSTGUARD_MODE": "enforce",
        "SLACK_SECRET_NAME": "costguard/slack",
        "ALERTS_CHANNEL": "#ml-costs",
        "DIGEST_CHANNEL": DIGEST_CHANNEL,
        "OWNER_TAG_KEY": "Owner",
        "EMAIL_DOMAIN": "example.com",
        "GOVERNED_REGIONS": ",".join(governed),
        "STATE_TABLE": "costguard-state",
        "SLACK_API_URL": slack.api_url,
        "TEAM_TAG_KEY": "Team",
        "POWERTOOLS_SERVICE_NAME": "costguard",
        "POWERTOOLS_METRICS_NAMESPACE": "costguard",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "BENCH_NOW": now,
    }


def digest_env(endpoint: str, slack: SlackStandIn, world: DigestWorld) -> dict[str, str]:
    """The weekly digest's Lambda environment with the template's defaults (activity check on, owner
    digests on), handing its week to a hub."""
    return {
        **lambda_env(endpoint, slack, world.now.isoformat(), (REGION,)),
        "OWNER_DIGESTS": "true",
        "OWNER_DIGESTS_ALWAYS": "false",
        "ACTIVITY_CHECK_DOCUMENT": "costguard-activity-check",
        "HANDOFF_QUEUE_ARN": HUB_QUEUE,
        "ACCOUNT_LABEL": "training",
        "SAGEMAKER_GOVERNANCE": "true",
    }


def floor(world: DigestWorld, owners_told: int, priced: int, spot_types: int) -> dict[str, int]:
    """The calls any weekly digest of this account needs, by operation (one region):

    - one GetSecretValue; DescribeInstances pages of 1,000 live machines;
    - ListMetrics pages of 500 over the GPU series the agents publish (one walk for the region);
    - GetMetricData: every series read (CPU, and each GPU's Maximum and Average), as many a call as its
      500 queries and 100,800 datapoints allow over the fortnight's hourly points;
    - one DescribeSpotPriceHistory per instance type asked (every zone in one answer), one GetProducts
      per type priced (the fleet's, and those advice compares them with): each asked once;
    - DescribeInstanceInformation: 50 a page, over the managed machines (one unfiltered walk) or the
      running ones (filtered by id), whichever is fewer;
    - the ledger's week: one Query per day partition (8: seven days and today);
    - Cost Explorer: the four commitment reports and one daily cost; one DescribeReservedInstances per
      region, one DescribeSavingsPlans;
    - one PutDashboard per team per region;
    - the week kept (one PutItem) and handed over (one SendMessage);
    - each Slack delivery claimed and marked done (a PutItem and an UpdateItem each: the channel post,
      its chart, each owner told), so that a retry sends nothing twice;
    - owners' Slack ids: BatchGetItem 100 a call, and (the first week) BatchWriteItem 25 a call;
    - Slack: users.list pages of 200 (the first week), one post per message, three calls per upload.
    """
    live = len(world.machines)
    running = [m for m in world.machines if m.state == "running"]
    managed = [m for m in running if m.managed]
    series = sum(1 + 2 * m.gpus * m.telemetry for m in world.machines)
    per_call = min(MAX_QUERIES, MAX_DATAPOINTS // world.slots)
    owners = len(world.owners_with_machines())
    deliveries = 2 + owners_told
    return {
        "secretsmanager:GetSecretValue": 1,
        "ec2:DescribeInstances": math.ceil(live / DESCRIBE_PAGE),
        "cloudwatch:ListMetrics": math.ceil(world.listed_series / LIST_METRICS_PAGE),
        "cloudwatch:GetMetricData": math.ceil(series / per_call),
        "ec2:DescribeSpotPriceHistory": spot_types,
        "pricing:GetProducts": priced,
        "ssm:DescribeInstanceInformation": math.ceil(min(len(managed), len(running)) / SSM_PAGE),
        "dynamodb:Query": 8,
        "ce:GetReservationUtilization": 1,
        "ce:GetReservationCoverage": 1,
        "ce:GetSavingsPlansUtilization": 1,
        "ce:GetSavingsPlansCoverage": 1,
        "ce:GetCostAndUsage": 1,
        "ec2:DescribeReservedInstances": 1,
        "savingsplans:DescribeSavingsPlans": 1,
        "cloudwatch:PutDashboard": len({m.team for m in world.machines}),
        "dynamodb:PutItem": 1 + deliveries,
        "dynamodb:UpdateItem": deliveries,
        "dynamodb:BatchGetItem": math.ceil(owners / BATCH_GET),
        "dynamodb:BatchWriteItem": math.ceil(owners / BATCH_WRITE),
        "sqs:SendMessage": 1,
        # the SageMaker part of the digest, in an account without SageMaker: one empty list of each kind
        "sagemaker:ListNotebookInstances": 1,
        "sagemaker:ListEndpoints": 1,
        "sagemaker:ListDomains": 1,
        "sagemaker:ListApps": 1,
        "slack:users.list": math.ceil(len(world.slack_users) / SLACK_USERS_PAGE),
        "slack:chat.postMessage": 1 + owners_told,
        "slack:files.getUploadURLExternal": 1,
        "slack:upload": 1,
        "slack:files.completeUploadExternal": 1,
    }


def run_handler(
    function: str,
    name: str,
    env: dict[str, str],
    *,
    profile: str = "",
    keep: Path | None = None,
    code: Path | None = None,
) -> tuple[float, dict[str, Any]]:
    """A scheduled handler in a fresh process (this tree's, or `code`'s library and handlers): the wall
    seconds from start to exit, and what the process reported (bench/handler_child.py)."""
    with tempfile.TemporaryDirectory() as tmp:
        where = keep or Path(tmp)
        out = where / f"{name}.json"
        argv = [sys.executable, "-m", "bench.handler_child", function, str(out)]
        if profile:
            argv += ["--profile", profile]
        if code is not None:
            env = {**env, "BENCH_CODE_ROOT": str(code)}
        started = time.perf_counter()
        with (where / f"{name}.log").open("wb") as log:
            status = subprocess.run(argv, check=False, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        wall = time.perf_counter() - started
        child: dict[str, Any] = {"status": "failed", "error": f"exit {status.returncode}"}
        if out.exists():
            child = json.loads(out.read_text())
        if child.get("status") != "done":
            log_tail = (where / f"{name}.log").read_text()[-2000:]
            raise RuntimeError(f"{function} ({name}) failed: {child.get('error')}\n{log_tail}")
    return wall, child


def measured(
    wall: float, child: dict[str, Any], aws: Any, slack: SlackStandIn, limit: dict[str, int]
) -> dict[str, Any]:
    """A run's measures, and its calls by operation against their floor."""
    if aws.unsupported:
        raise RuntimeError(f"the stand-in was asked what it does not implement: {sorted(set(aws.unsupported))}")
    calls = {**dict(aws.calls), **{f"slack:{k}": v for k, v in Counter(slack.calls).items()}}
    aws_calls = sum(v for k, v in calls.items() if not k.startswith("slack:"))
    aws_floor = sum(v for k, v in limit.items() if not k.startswith("slack:"))
    return {
        "latency_ms": round(aws.latency_s * 1000),
        "wall_s": round(wall, 1),
        "cpu_s": child["cpu_s"],
        "peak_rss_mb": child["peak_rss_mb"],
        "import_s": child["import_s"],
        "handler_s": child["handler_s"],
        "standin_busy_s": round(aws.busy_s, 1),
        "aws_calls": aws_calls,
        "aws_floor": aws_floor,
        "aws_vs_floor": round(aws_calls / aws_floor, 2),
        "slack_429s": dict(sorted((slack.limits.refused if slack.limits else {}).items())),
        "calls": {op: {"made": calls.get(op, 0), "floor": limit.get(op, 0)} for op in sorted(set(calls) | set(limit))},
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
        answer = child["answer"]
        limit = floor(world, len(answer["owners_told"]), len(aws.priced), len(aws.spot_asked))
        return {
            "instances": n,
            **measured(wall, child, aws, slack, limit),
            "owners_told": len(answer["owners_told"]),
            "owners_quiet": len(answer["owners_quiet"]),
            "owners_unreachable": len(answer["owners_unreachable"]),
            "idle_gpu_hours": answer["idle_gpu_hours"],
            "waste_usd": answer["waste_usd"],
        }
    finally:
        slack.stop()
        aws.stop()


def load() -> str:
    """The machine's load while the benchmark ran: a shared machine's wall times depend on it."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min) on {os.cpu_count()} cores"


def show(run: dict[str, Any]) -> None:
    over = {op: c for op, c in run["calls"].items() if c["made"] != c["floor"]}
    print(
        f"  weekly digest, {run['instances']:,} machines at {run['latency_ms']} ms: wall {run['wall_s']} s, "
        f"CPU {run['cpu_s']} s, peak {run['peak_rss_mb']} MB, AWS calls {run['aws_calls']} "
        f"(floor {run['aws_floor']}, {run['aws_vs_floor']}x); off the floor: "
        + ", ".join(f"{op} {c['made']}/{c['floor']}" for op, c in over.items())
    )


def tree_of(commit: str, into: Path) -> Path:
    """The library and handlers of `commit`, unpacked under `into` (to measure or capture older code)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit, "layers/costguard", "functions"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def main(
    sizes: tuple[int, ...] = SIZES, latencies: tuple[float, ...] = LATENCIES, code: Path | None = None
) -> dict[str, Any]:
    runs = []
    for n in sizes:
        for latency in latencies:
            before = load()
            run = run_weekly(n, latency, code=code)
            run["load_before"], run["load_after"] = before, load()
            show(run)
            runs.append(run)
    return {"weekly_digest": runs}


if __name__ == "__main__":
    args = sys.argv[1:]
    options = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    profile = options.get("--profile", "")
    chosen = (float(options["--latency"]),) if "--latency" in options else LATENCIES
    numbers = tuple(int(a) for a in args if a.isdigit() and a not in options.values())
    with tempfile.TemporaryDirectory() as tmp:
        commit = options.get("--commit")
        tree = tree_of(commit, Path(tmp)) if commit else None
        if profile:
            keep = Path(tempfile.gettempdir()) / "costguard-profiles"
            keep.mkdir(parents=True, exist_ok=True)
            for n in numbers or SIZES:
                show(run_weekly(n, chosen[0], profile=profile, keep=keep, code=tree))
            print(f"  profiles in {keep}")
        else:
            result = main(numbers or SIZES, chosen, tree)
            if commit:
                result["code"] = subprocess.run(
                    ["git", "rev-parse", commit], cwd=ROOT, capture_output=True, text=True, check=True
                ).stdout.strip()
            if "--save" in options:
                print(f"  saved {save(options['--save'], result)}")
