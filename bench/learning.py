"""The learning of recurring work at scale: a sweep about to warn 1,000 GPU machines (4 GPUs each, the first
sweep of a large account, where every idle machine is warned at once) reads two weeks of their GPU and CPU
in quarter-hours, their starts and stops, and their learned starts, then learns.

AWS is a stand-in in this process (30 ms a call): CloudWatch answers every query with its period's points
(1,344 a series over two weeks) within GetMetricData's 500 queries and 100,800 datapoints a call; DynamoDB
answers GetItem and BatchGetItem. Measured: the calls, the wall and CPU seconds, and the peak of memory
the learning allocates (tracemalloc), and how many machines were found to have recurring work (a third of
them run a nightly job)."""

from __future__ import annotations

import time
import tracemalloc
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from costguard.aws.cloudwatch.reads import MAX_DATAPOINTS, MAX_QUERIES, MetricReader
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy, Mode
from costguard.idle.reads.fortnights import Learner
from costguard.idle.rules.decision import Action, Decision
from costguard.state.history import MachineHistory
from costguard.state.ledger import Ledger
from costguard.state.startlog import StartLog

MACHINES, GPUS, LATENCY = 1_000, 4, 0.03
NOW = datetime(2026, 11, 23, 6, 0, tzinfo=UTC)


class Stand:
    """CloudWatch's GetMetricData and DynamoDB's reads, for the learning alone."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def _call(self, name: str) -> None:
        self.calls[name] += 1
        time.sleep(LATENCY)

    def get_metric_data(self, **params: Any) -> dict[str, Any]:
        queries = params["MetricDataQueries"]
        assert 1 <= len(queries) <= MAX_QUERIES, len(queries)
        self._call("GetMetricData")
        start, end = params["StartTime"], params["EndTime"]
        period = timedelta(seconds=queries[0]["MetricStat"]["Period"])
        times = [start + period * k for k in range(int((end - start) / period))]
        skip_query, skip_point = (int(x) for x in (params.get("NextToken") or "0:0").split(":"))
        budget, out, token = MAX_DATAPOINTS, [], ""
        for q in range(skip_query, len(queries)):
            dims = {d["Name"]: d["Value"] for d in queries[q]["MetricStat"]["Metric"]["Dimensions"]}
            nightly = int(dims["InstanceId"][-4:], 16) % 3 == 0  # a third run a job at 02:00 every night
            values = [85.0 if nightly and t.hour == 2 else 1.0 for t in times]
            first = skip_point if q == skip_query else 0
            take = min(budget, len(times) - first)
            out.append({"Id": queries[q]["Id"], "Timestamps": times[first : first + take],
                        "Values": values[first : first + take], "StatusCode": "Complete"})  # fmt: skip
            budget -= take
            if first + take < len(times):
                out[-1]["StatusCode"] = "PartialData"
                token = f"{q}:{first + take}"
                break
        return {"MetricDataResults": out, **({"NextToken": token} if token else {})}

    def get_item(self, **_: Any) -> dict[str, Any]:
        self._call("GetItem")
        return {}

    def batch_get_item(self, **_: Any) -> dict[str, Any]:
        self._call("BatchGetItem")
        return {"Responses": {}, "UnprocessedKeys": {}}

    def batch_write_item(self, **_: Any) -> dict[str, Any]:
        self._call("BatchWriteItem")
        return {"UnprocessedItems": {}}


def main() -> dict[str, Any]:
    stand = Stand()
    policy = IdlePolicy()
    learner = Learner(
        metrics=MetricReader(stand, policy),  # type: ignore[arg-type]
        history=MachineHistory(stand, "state"),  # type: ignore[arg-type]
        starts=StartLog(stand, "state"),  # type: ignore[arg-type]
        ledger=Ledger(stand, "state"),  # type: ignore[arg-type]
        policy=policy,
        mode=Mode.ENFORCE,
        owner_tag_key="Owner",
    )
    machines = [
        Instance(f"i-{k:017x}", "us-east-1", "g5.12xlarge", "running", NOW - timedelta(days=30))
        for k in range(MACHINES)
    ]
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
    adjusted = learner.adjust(decided, gpu_series, NOW)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    learned = sum(1 for _, d in adjusted if d.learned)
    result = {
        "machines": MACHINES,
        "gpus_each": GPUS,
        "calls": dict(sorted(stand.calls.items())),
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
