"""The weekly digest's fortnight of hourly metrics at 1,000 and 10,000 GPU instances: wall time at 0 and 30
ms an AWS call, peak memory, and GetMetricData calls against their floor.

What runs is the digest's own reading and folding (`iter_hours` over every instance, then `summarize`
for both weeks and `worst_idle`), the part whose memory grows with the fleet. CloudWatch is
testing/aws/cloudwatch.py in process, over testing/worlds/hourly.py, with AWS's quotas: ListMetrics 500
a page, GetMetricData at most 500 queries and 100,800 datapoints a call (the rest behind a NextToken).
Each size runs in a child process, so its peak resident memory is its own (ru_maxrss), reported with the
interpreter's baseline after imports."""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import ROOT
from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import GpuSeriesFinder
from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.digest.weekly.hours import iter_hours
from costguard.digest.weekly.rules.figures import summarize, worst_idle
from testing.aws.cloudwatch import MAX_POINTS_PER_CALL as MAX_DATAPOINTS
from testing.aws.cloudwatch import MAX_QUERIES, CloudWatchClient
from testing.worlds.hourly import HourlyFleet

SIZES = (1_000, 10_000)
LATENCIES = (0.0, 0.03)
# (type, GPUs, share): about six series an instance (CPU, and each GPU's maximum and mean).
TYPES = (("g5.xlarge", 1, 0.40), ("g6.xlarge", 1, 0.25), ("g5.12xlarge", 4, 0.25), ("p4d.24xlarge", 8, 0.10))


def child(size: int, latency: float) -> dict[str, Any]:
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    now = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    start = (now - timedelta(days=7)).replace(hour=0)
    earlier = start - timedelta(days=7)
    instances, gpus = [], {}
    for k in range(size):
        position, total = (k * 7919) % size / size, 0.0
        instance_type, count = TYPES[-1][0], TYPES[-1][1]
        for name, n, share in TYPES:
            total += share
            if position < total:
                instance_type, count = name, n
                break
        iid = f"i-{k:017x}"
        gpus[iid] = count
        tags = {"Owner": f"user{k % 500}@example.com", "Team": f"team{k % 20}"}
        instances.append(Instance(iid, "us-east-1", instance_type, "running", earlier - timedelta(days=30), tags))
    world = HourlyFleet(gpus, earlier, now)
    cloudwatch = CloudWatchClient(world, latency)
    policy = IdlePolicy()
    started = time.perf_counter()
    weeks = list(
        iter_hours(
            "us-east-1",
            instances,
            earlier,
            now,
            gpu_series=GpuSeriesFinder(cloudwatch),  # type: ignore[arg-type]
            metrics=MetricReader(cloudwatch, policy),  # type: ignore[arg-type]
            prices=PriceBook(None),
            owner_tag_key="Owner",
            team_tag_key="Team",
        )
    )
    this_week, last_week = summarize(weeks, start, now, policy), summarize(weeks, earlier, start, policy)
    worst = worst_idle(weeks, this_week)
    wall = time.perf_counter() - started
    series = sum(1 + 2 * n for n in gpus.values())
    points = series * len(world.times)
    floor = math.ceil(series / min(MAX_QUERIES, MAX_DATAPOINTS // len(world.times)))
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "instances": size,
        "latency_ms": round(latency * 1000),
        "series": series,
        "datapoints": points,
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(peak_kb / 1024),
        "baseline_rss_mb": round(baseline_kb / 1024),
        "get_metric_data_calls": cloudwatch.calls["GetMetricData"],
        "get_metric_data_floor": floor,
        "list_metrics_pages": cloudwatch.calls["ListMetrics"],
        "idle_gpu_hours_this_week": round(this_week.fleet.idle_gpu_hours),
        "idle_gpu_hours_last_week": round(last_week.fleet.idle_gpu_hours),
        "worst_idle": len(worst),
    }


def main() -> dict[str, Any]:
    runs = []
    for size in SIZES:
        for latency in LATENCIES:
            answer = subprocess.run(
                [sys.executable, "-m", "bench.digest", str(size), str(latency)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            )
            run = json.loads(answer.stdout.strip().splitlines()[-1])
            print(
                f"  digest, {size:,} instances at {run['latency_ms']} ms: {run['wall_s']} s, "
                f"peak {run['peak_rss_mb']} MB "
                f"(baseline {run['baseline_rss_mb']} MB), GetMetricData {run['get_metric_data_calls']} calls "
                f"(floor {run['get_metric_data_floor']})"
            )
            runs.append(run)
    return {"runs": runs}


if __name__ == "__main__":
    print(json.dumps(child(int(sys.argv[1]), float(sys.argv[2]))))
