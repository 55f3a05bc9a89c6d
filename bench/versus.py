"""costguard vs Cloud Custodian: one idle-GPU sweep over the same fleet, measured side by side.

For each fleet size N and injected latency, each tool runs in a fresh process against a fresh copy
of the same fleet served by `testing/aws/server.py`: costguard's idle_stopper handler (enforce mode, idle
alarms off, as Custodian has none), and `custodian run` on POLICY (c7n from PyPI in .venv-c7n).
The parent counts every AWS call by operation at the server, times the process, reads its peak RSS
(VmHWM), and checks what was stopped against what the fleet says should be.

`check_against_moto` runs both tools on the same fleet in moto's server and on the stand-in, and
compares the stopped sets: the stand-in is only worth its numbers if they agree.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import ROOT
from testing.aws.server import StandIn
from testing.runs.handler import aws_env
from testing.slack_standin import RateLimits, SlackStandIn
from testing.worlds.fleet import GPU_METRIC, Fleet

CUSTODIAN = ROOT / ".venv-c7n" / "bin" / "custodian"
HOME = "us-east-1"
WINDOW_DAYS = 2 / 24
# The Custodian policy a user would write for the same rule: running GPU instances whose CPU stayed
# under 10 % and whose GPUs stayed under 5 % in every 5-minute period of the last two hours, stopped.
POLICY = f"""\
policies:
  - name: stop-idle-gpu-instances
    resource: aws.ec2
    query:
      - instance-state-name: running
    filters:
      - type: value
        key: InstanceType
        op: regex
        value: "^(p|g|trn|inf|dl)[0-9].*"
      - type: metrics
        name: CPUUtilization
        statistics: Maximum
        days: {WINDOW_DAYS:.6f}
        period: 300
        op: less-than
        value: 10
      - type: metrics
        namespace: CWAgent
        name: nvidia_smi_utilization_gpu
        statistics: Maximum
        days: {WINDOW_DAYS:.6f}
        period: 300
        op: less-than
        value: 5
    actions:
      - stop
"""


@dataclass
class Run:
    tool: str
    n: int
    latency_ms: int
    backend: str
    wall_s: float
    peak_rss_mb: float
    calls: dict[str, int]
    stopped: set[int]
    detail: dict[str, Any]
    standin_s: float = 0.0

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


def costguard_env(endpoint: str, slack_url: str) -> dict[str, str]:
    return {
        **aws_env(endpoint),
        "COSTGUARD_MODE": "enforce",
        "SLACK_SECRET_NAME": "costguard/slack",
        "ALERTS_CHANNEL": "#ml-costs",
        "OWNER_TAG_KEY": "Owner",
        "GOVERNED_REGIONS": HOME,
        "STATE_TABLE": "costguard-state",
        "SLACK_API_URL": slack_url,
        "IDLE_ALARMS": "false",
        "POWERTOOLS_SERVICE_NAME": "costguard",
        "POWERTOOLS_METRICS_NAMESPACE": "costguard",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }


def measure(python: str, module: str, args: list[str], env: dict[str, str], log: Path) -> tuple[float, float, int]:
    """Run `python -m module args` to its end: wall seconds, peak RSS in MB (VmHWM, see peak.py), exit status."""
    peak = log.with_suffix(".peak")
    argv = [python, str(ROOT / "bench" / "peak.py"), str(peak), module, *args]
    started = time.perf_counter()
    with log.open("wb") as out:
        code = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, check=False).returncode
    wall = time.perf_counter() - started
    return wall, int(peak.read_text()) / 1024 if peak.exists() else float("nan"), code


def run_costguard(endpoint: str, slack: SlackStandIn, workdir: Path) -> tuple[float, float, dict[str, Any]]:
    out = workdir / "costguard.json"
    log = workdir / "costguard.log"
    env = {**costguard_env(endpoint, slack.api_url), "PYTHONPATH": str(ROOT)}
    wall, rss, code = measure(sys.executable, "bench.sweep_child", [str(out)], env, log)
    detail = json.loads(out.read_text()) if out.exists() else {}
    if code != 0 or detail.get("status") != "done":
        raise RuntimeError(f"costguard sweep failed ({code}): {detail.get('error')}; see {log}")
    return wall, rss, detail


def run_custodian(endpoint: str, workdir: Path) -> tuple[float, float, dict[str, Any]]:
    if not CUSTODIAN.exists():
        raise RuntimeError(f"{CUSTODIAN} missing: `make bench` installs it from requirements-c7n.txt")
    policy = workdir / "policy.yml"
    policy.write_text(POLICY)
    log = workdir / "custodian.log"
    args = ["run", "--cache-period", "0", "-s", str(workdir / "out"), "--region", HOME, str(policy)]
    wall, rss, code = measure(str(CUSTODIAN.parent / "python"), "c7n.cli", args, aws_env(endpoint), log)
    text = log.read_text(errors="replace")
    if code != 0 or "Traceback" in text:
        raise RuntimeError(f"custodian failed ({code}); see {log}:\n{text[-2000:]}")
    return wall, rss, {"log_tail": text.strip().splitlines()[-3:]}


def on_standin(tool: str, n: int, latency_ms: int, workdir: Path) -> Run:
    fleet = Fleet(n)
    server = StandIn(fleet, latency_s=latency_ms / 1000, secret={"bot_token": "xoxb-bench"}).start()
    # The fleet's owners are in Slack, and Slack's limits hold: one post a second per channel, the tiers.
    users = {f"user{k}@example.com": f"U{k:05d}" for k in range(fleet.owners)}
    slack = SlackStandIn(users=users, token="xoxb-bench", latency_s=latency_ms / 1000, limits=RateLimits()).start()
    try:
        if tool == "costguard":
            wall, rss, detail = run_costguard(server.url, slack, workdir)
            detail["slack_calls"] = len(slack.calls)
            detail["slack_calls_by_method"] = dict(sorted(Counter(slack.calls).items()))
            detail["slack_messages"] = len(slack.messages)
            detail["slack_429s"] = dict(sorted(slack.limits.refused.items())) if slack.limits else {}
        else:
            wall, rss, detail = run_custodian(server.url, workdir)
        if server.unsupported:
            raise RuntimeError(f"{tool} called what the stand-in does not answer: {sorted(set(server.unsupported))}")
        return Run(
            tool,
            n,
            latency_ms,
            "stand-in",
            wall,
            rss,
            dict(sorted(server.calls.items())),
            server.stopped_indexes(),
            detail,
            server.busy_s,
        )
    finally:
        slack.stop()
        server.stop()


def verdict(fleet: Fleet, stopped: set[int]) -> dict[str, Any]:
    """Exactly the idle instances stopped? The wrong stops and the misses, by kind."""
    expected = fleet.expected_stops()
    kinds = {i.index: i.kind for i in fleet.instances}
    wrong: dict[str, int] = {}
    for index in sorted(stopped - expected):
        wrong[kinds[index]] = wrong.get(kinds[index], 0) + 1
    return {
        "exact": stopped == expected,
        "stopped": len(stopped),
        "idle": len(expected),
        "missed": len(expected - stopped),
        "wrongly_stopped_by_kind": wrong,
    }


def floor(fleet: Fleet) -> dict[str, int]:
    """The fewest calls that do the same work: pages at AWS's maximum sizes, batched actions."""
    gpu_listed = sum(1 for s in fleet.series if s.name == GPU_METRIC)
    # The CPU, the busiest core and every GPU; the GPU aggregate adds nothing.
    needed = sum(1 for s in fleet.series if s.gpu != -1)
    stops = len(fleet.expected_stops())
    return {
        "ec2:DescribeInstances": math.ceil(len(fleet.instances) / 1000),
        "cloudwatch:ListMetrics": math.ceil(gpu_listed / 500),
        "cloudwatch:GetMetricData": math.ceil(needed / 500),
        "ec2:StopInstances": math.ceil(stops / 1000),
    }


# ---------------------------------------------------------------------- moto cross-check
def on_moto(tool: str, fleet: Fleet, workdir: Path) -> set[int]:
    """Seed moto's server with the fleet, run the tool against it, return the fleet indexes it stopped."""
    from testing.account import LocalAccount  # noqa: PLC0415 (moto's server only for the cross-check)
    from testing.template import install_costguard  # noqa: PLC0415

    account = LocalAccount(users={f"user{k}@example.com": f"U{k:04d}" for k in range(200)})
    try:
        # moto's state lives in this process, across servers: every tool starts from an empty account.
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{account.moto_port}/moto-api/reset", b""))
        ids = seed_moto(account, fleet)
        env = costguard_env(account.proxy.url, account.slack.api_url)
        install_costguard(
            account.client("dynamodb"),
            account.client("secretsmanager"),
            env,
            json.dumps({"bot_token": account.slack.token}),
        )
        if tool == "costguard":
            run_costguard(account.proxy.url, account.slack, workdir)
        else:
            run_custodian(account.proxy.url, workdir)
        reply = account.client("ec2").describe_instances(
            Filters=[{"Name": "instance-state-name", "Values": ["stopping", "stopped"]}]
        )
        stopped = {i["InstanceId"] for r in reply["Reservations"] for i in r["Instances"]}
        return {index for index, moto_id in ids.items() if moto_id in stopped}
    finally:
        account.close()


def seed_moto(account: Any, fleet: Fleet) -> dict[int, str]:
    from testing import moto_fixes  # noqa: PLC0415

    ec2 = account.client("ec2")
    cloudwatch = account.client("cloudwatch")
    ids: dict[int, str] = {}
    for instance in fleet.instances:
        tags = [{"Key": k, "Value": v} for k, v in fleet.tags(instance).items()]
        reply = ec2.run_instances(
            ImageId="ami-12c6146b",
            MinCount=1,
            MaxCount=1,
            InstanceType=instance.instance_type,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )
        ids[instance.index] = reply["Instances"][0]["InstanceId"]
        moto_fixes.set_launch_time(ids[instance.index], HOME, fleet.launch)
    start, end = int(fleet.launch.timestamp()), int(datetime.now(UTC).timestamp()) + 1
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for series in fleet.series:
        moto_id = ids[series.instance.index]
        dims = [{"Name": k, "Value": moto_id if k == "InstanceId" else v} for k, v in series.dims]
        by_namespace.setdefault(series.namespace, []).extend(
            {
                "MetricName": series.name,
                "Dimensions": dims,
                "Timestamp": datetime.fromtimestamp(at, UTC),
                "Value": value,
                "Unit": "Percent",
            }
            for at, value in fleet.points(series, start, end)
        )
    for namespace, data in by_namespace.items():
        for offset in range(0, len(data), 1000):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[offset : offset + 1000])
    return ids


def check_against_moto(n: int = 100) -> dict[str, Any]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # this process seeds moto; never a real account
        os.environ[key] = "bench"
    fleet = Fleet(n)
    out: dict[str, Any] = {"n": n, "expected": sorted(fleet.expected_stops())}
    for tool in ("costguard", "custodian"):
        with tempfile.TemporaryDirectory() as tmp:
            in_moto = on_moto(tool, fleet, Path(tmp))
        with tempfile.TemporaryDirectory() as tmp:
            stand_in = on_standin(tool, n, 0, Path(tmp)).stopped
        out[tool] = {"moto": sorted(in_moto), "stand_in": sorted(stand_in), "same": in_moto == stand_in}
    return out


SWEEP_SERVICES = ("ec2", "cloudwatch")  # the calls the floor counts; the rest is each tool's own overhead


def sweep_calls(run: Run) -> int:
    return sum(v for k, v in run.calls.items() if k.split(":")[0] in SWEEP_SERVICES)


def measure_all(sizes: tuple[int, ...], latencies: tuple[int, ...]) -> list[Run]:
    runs: list[Run] = []
    for n in sizes:
        for latency in latencies:
            for tool in ("costguard", "custodian"):
                with tempfile.TemporaryDirectory() as tmp:
                    run = on_standin(tool, n, latency, Path(tmp))
                runs.append(run)
                print(
                    f"  {tool:<9} N={n:<6} {latency:>2} ms: {run.total_calls:>6} calls, {run.wall_s:6.1f} s, "
                    f"{run.peak_rss_mb:4.0f} MB, {verdict(Fleet(n), run.stopped)}",
                    flush=True,
                )
    return runs


def summarize(runs: list[Run], sizes: tuple[int, ...], latencies: tuple[int, ...]) -> dict[str, Any]:
    rows = []
    floors = {}
    for n in sizes:
        fleet = Fleet(n)
        bottom = floors[n] = floor(fleet)
        for tool in ("costguard", "custodian"):
            mine = {r.latency_ms: r for r in runs if r.n == n and r.tool == tool}
            first = mine[latencies[0]]
            if any(r.calls != first.calls for r in mine.values()):
                raise RuntimeError(f"{tool} at N={n} made different calls at different latencies")
            rows.append(
                {
                    "n": n,
                    "tool": tool,
                    "series": len(fleet.series),
                    "calls": first.total_calls,
                    "sweep_calls": sweep_calls(first),
                    "floor": sum(bottom.values()),
                    "by_operation": first.calls,
                    "wall_s": {lat: round(r.wall_s, 1) for lat, r in mine.items()},
                    "standin_s": {lat: round(r.standin_s, 1) for lat, r in mine.items()},
                    "handler_s": {lat: r.detail.get("sweep_s") for lat, r in mine.items()},
                    "peak_rss_mb": round(max(r.peak_rss_mb for r in mine.values())),
                    "verdict": verdict(fleet, first.stopped),
                    "same_stops_at_every_latency": all(r.stopped == first.stopped for r in mine.values()),
                    "slack_calls": first.detail.get("slack_calls", 0),
                    "slack_calls_by_method": first.detail.get("slack_calls_by_method", {}),
                    "slack_messages": first.detail.get("slack_messages", 0),
                    "slack_429s": first.detail.get("slack_429s", {}),
                    "handler_status": {lat: r.detail.get("status") for lat, r in mine.items()},
                    "deferred": {
                        lat: sum(g.get("deferred", 0) for g in (r.detail.get("regions") or {}).values())
                        for lat, r in mine.items()
                    },
                }
            )
    return {"rows": rows, "floors": floors}


def targets(summary: dict[str, Any], biggest: int, latency: int) -> list[tuple[str, str, bool]]:
    rows = {(r["n"], r["tool"]): r for r in summary["rows"]}
    ours, theirs = rows[(biggest, "costguard")], rows[(biggest, "custodian")]
    over_floor = ours["sweep_calls"] / ours["floor"]
    fewer = theirs["calls"] / ours["calls"]
    wall = ours["wall_s"][latency]
    return [
        ("EC2+CloudWatch calls within 1.2x of the floor", f"{ours['sweep_calls']} / {ours['floor']} = "
         f"{over_floor:.2f}x", over_floor <= 1.2),
        ("at least 50x fewer calls than Custodian (all AWS calls)", f"{theirs['calls']} / {ours['calls']} = "
         f"{fewer:.0f}x", fewer >= 50),
        (f"sweep under 60 s at {latency} ms", f"{wall} s", wall < 60),
        ("peak memory under 200 MB", f"{ours['peak_rss_mb']} MB", ours["peak_rss_mb"] < 200),
        ("exactly the idle instances stopped", str(ours["verdict"]["exact"]), bool(ours["verdict"]["exact"])),
    ]  # fmt: skip


def table(summary: dict[str, Any], latencies: tuple[int, ...]) -> str:
    head = (
        "| N | tool | AWS calls | EC2+CW calls (floor) | "
        + " | ".join(f"wall at {lat} ms" for lat in latencies)
        + " | peak RSS | stopped (idle) | wrong stops |"
    )
    lines = [head, "|" + "---|" * (7 + len(latencies))]
    for r in summary["rows"]:
        v = r["verdict"]
        wrong = ", ".join(f"{count} {kind}" for kind, count in v["wrongly_stopped_by_kind"].items()) or "none"
        walls = " | ".join(f"{r['wall_s'][lat]} s" for lat in latencies)
        lines.append(
            f"| {r['n']:,} | {r['tool']} | {r['calls']:,} | {r['sweep_calls']:,} ({r['floor']}) | {walls} | "
            f"{r['peak_rss_mb']} MB | {v['stopped']:,} ({v['idle']:,}) | {wrong} |"
        )
    return "\n".join(lines)


def main(
    sizes: tuple[int, ...] = (100, 1_000, 10_000), latencies: tuple[int, ...] = (0, 30), moto_n: int = 100
) -> dict[str, Any]:
    print(f"costguard vs Cloud Custodian: one idle-GPU sweep, fleets of {sizes}, latency {latencies} ms")
    moto = check_against_moto(moto_n)
    for tool in ("costguard", "custodian"):
        print(f"  moto vs stand-in at N={moto_n}, {tool}: same stopped set: {moto[tool]['same']}")
    runs = measure_all(sizes, latencies)
    summary = summarize(runs, sizes, latencies)
    checks = targets(summary, max(sizes), max(latencies))
    print(table(summary, latencies))
    for label, value, met in checks:
        print(f"  {'met ' if met else 'MISS'} {label}: {value}")
    return {"moto_check": moto, **summary, "targets": checks, "policy": POLICY}
