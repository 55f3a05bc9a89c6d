"""The learning of recurring work at scale: a sweep about to warn 1,000 GPU machines (4 GPUs each, the
first sweep of a large account, where every idle machine is warned at once) reads two weeks of their GPU
and CPU in quarter-hours, their starts and stops, and their learned starts, then learns.

AWS is testing/aws in this process (30 ms a call): CloudWatch (testing/aws/cloudwatch.py) answers each
published series with its period's points (1,344 a series over two weeks) within GetMetricData's 500
queries and 100,800 datapoints a call; DynamoDB (testing/aws/dynamodb.py) holds an empty state table.
Measured: the calls, the wall and CPU seconds, and the peak of memory the learning allocates
(tracemalloc), and how many machines were found to have recurring work (a third of them run a nightly
job)."""

from __future__ import annotations

import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from typing import Any

from costguard.aws.cloudwatch.reads import MetricReader
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy, Mode
from costguard.idle.acts.kept import Promises
from costguard.idle.reads.fortnights import Learner
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.pipeline import learned_rules, promised
from costguard.state.history import MachineHistory
from costguard.state.ledger import Ledger
from costguard.state.startlog import StartLog
from testing.aws.cloudwatch import CloudWatchClient, Listed, Points, SeriesKey
from testing.aws.dynamodb import DynamoDBClient

MACHINES, GPUS, LATENCY = 1_000, 4, 0.03
NOW = datetime(2026, 11, 23, 6, 0, tzinfo=UTC)


class NightlyJobs:
    """What the machines publish, for testing/aws/cloudwatch.py: CPUUtilization (AWS/EC2), the busiest core
    (CWAgent cpu_usage_active) and each GPU (CWAgent, InstanceId, index, name) at any period, every
    statistic alike; a third of the machines (by their id) run a job at 02:00 every night, the rest idle."""

    def __init__(self, machines: list[str]) -> None:
        self.series: dict[SeriesKey, str] = {}
        self.order: list[Listed] = []
        for iid in machines:
            gpus = [(("InstanceId", iid), ("index", str(g)), ("name", "NVIDIA A10G")) for g in range(GPUS)]
            published: list[Listed] = [
                ("AWS/EC2", "CPUUtilization", (("InstanceId", iid),)),
                ("CWAgent", "cpu_usage_active", (("InstanceId", iid),)),
                *[("CWAgent", "nvidia_smi_utilization_gpu", dims) for dims in gpus],
            ]
            self.order += published
            self.series.update({(ns, name, frozenset(dims)): iid for ns, name, dims in published})

    def listed(self, recently_active: bool) -> list[Listed]:  # noqa: ARG002 (all are recent)
        return self.order

    def points(self, key: SeriesKey, start: float, end: float, period: int, stat: str) -> Points | None:  # noqa: ARG002
        iid = self.series.get(key)
        if iid is None:
            return None
        times = [start + period * k for k in range(int((end - start) // period))]
        nightly = int(iid[-4:], 16) % 3 == 0  # a third run a job at 02:00 every night
        return times, [85.0 if nightly and datetime.fromtimestamp(t, UTC).hour == 2 else 1.0 for t in times]


def main() -> dict[str, Any]:
    machines = [
        Instance(f"i-{k:017x}", "us-east-1", "g5.12xlarge", "running", NOW - timedelta(days=30))
        for k in range(MACHINES)
    ]
    cloudwatch = CloudWatchClient(NightlyJobs([m.instance_id for m in machines]), LATENCY)
    state = DynamoDBClient(latency=LATENCY)
    policy = IdlePolicy()
    learner = Learner(
        metrics=MetricReader(cloudwatch, policy),  # type: ignore[arg-type]
        history=MachineHistory(state, "state"),  # type: ignore[arg-type]
        starts=StartLog(state, "state"),  # type: ignore[arg-type]
        policy=policy,
    )
    promises = Promises(
        starts=StartLog(state, "state"),  # type: ignore[arg-type]
        ledger=Ledger(state, "state"),  # type: ignore[arg-type]
        mode=Mode.ENFORCE,
        owner_tag_key="Owner",
    )
    gpu_series = {
        m.instance_id: [
            (("InstanceId", m.instance_id), ("index", str(g)), ("name", "NVIDIA A10G")) for g in range(GPUS)
        ]
        for m in machines
    }
    decided = [
        (m, Decision(m.instance_id, Action.WARN, "idle", stop_after=NOW + timedelta(minutes=30))) for m in machines
    ]
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    past = learner.past(decided, gpu_series, NOW)  # the reads, then the pipeline's rules 4 to 7
    adjusted = [
        (m, promised(m, learned_rules(m, d, past.get(m.instance_id), policy, NOW), promises, NOW)) for m, d in decided
    ]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    learned = sum(1 for _, d in adjusted if d.next_work)
    result = {
        "machines": MACHINES,
        "gpus_each": GPUS,
        "calls": dict(sorted((cloudwatch.calls + state.calls).items())),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "peak_mb": round(peak / 2**20, 1),
        "with_recurring_work": learned,
    }
    print(
        f"  learning for {MACHINES} machines about to be warned: {result['calls']}, {result['wall_s']} s "
        f"({result['cpu_s']} s CPU), peak {result['peak_mb']} MB; recurring work on {learned}"
    )
    return result


if __name__ == "__main__":
    main()
