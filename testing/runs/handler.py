"""A scheduled handler run whole in a fresh interpreter against the stand-ins, as Lambda runs it (the
weekly digest, the deep dive, the organization digest): its Lambda environment, the run, its measures and
its calls by operation against a floor. Shared by the tests of the calls' floors and the benchmarks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from io import BytesIO
from pathlib import Path
from typing import Any

from testing.slack_standin import SlackStandIn
from testing.template import lambda_environment

ROOT = Path(__file__).resolve().parents[2]
HOME = "us-east-1"
TOKEN = "xoxb-bench"
DIGEST_CHANNEL = "C0DIGEST"


def aws_env(endpoint: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "PYENV_VERSION")}
    return {
        **keep,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": HOME,
        "AWS_REGION": HOME,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


# What `sam deploy` is told for the account these runs stand for (the rest: the template's defaults).
PARAMETERS = {
    "Mode": "enforce",
    "AlertsChannel": "#ml-costs",
    "DigestChannel": DIGEST_CHANNEL,
    "EmailDomain": "example.com",
    "LogLevel": "WARNING",
    "Tracing": "Disabled",
}
RESOURCES = {"StateTable": "costguard-state", "ActivityCheckDocument": "costguard-activity-check"}


def lambda_env(
    function: str,
    endpoint: str,
    slack: SlackStandIn,
    now: str,
    governed: tuple[str, ...],
    parameters: Mapping[str, str] | None = None,
    resources: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The function's Lambda environment, from template.yaml (testing.template.lambda_environment) with
    this account's parameters, pointed at the stand-ins, with the benchmark's clock."""
    chosen = {**PARAMETERS, "GovernedRegions": ",".join(governed), **(parameters or {})}
    return {
        **aws_env(endpoint),
        "PYTHONPATH": str(ROOT),
        **lambda_environment(function, chosen, {**RESOURCES, **(resources or {})}),
        "SLACK_API_URL": slack.api_url,
        "BENCH_NOW": now,
        # Set in every Lambda: X-Ray's recorder then samples locally; outside Lambda, it makes two botocore
        # clients of its own as it is imported (about 17 MB and 0.15 s of CPU that Lambda does not spend).
        "LAMBDA_TASK_ROOT": str(ROOT / "functions" / function),
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
    seconds from start to exit, and what the process reported (testing/runs/child.py)."""
    with tempfile.TemporaryDirectory() as tmp:
        where = keep or Path(tmp)
        out = where / f"{name}.json"
        argv = [sys.executable, "-m", "testing.runs.child", function, str(out)]
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
