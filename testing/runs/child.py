"""One scheduled handler in a fresh interpreter, the way Lambda runs it:
`python -m testing.runs.child FUNCTION OUT.json [--profile cpu|memory]`.

The parent sets the Lambda environment (AWS_ENDPOINT_URL at the stand-in, SLACK_API_URL at Slack's) and
the invocation's moment (BENCH_NOW, ISO 8601: the world's present, so its data lines up), and counts the
calls at the servers. This reports what only the process can see: the import time, the handler's time
and answer, the process's CPU seconds (getrusage, imports included) and its peak resident memory (VmHWM:
ru_maxrss would carry the forking parent's high-water mark over exec, see bench/peak.py).

`--profile cpu` writes a cProfile of the handler next to OUT (OUT.prof); `--profile memory` traces
allocations (tracemalloc) and writes the top allocation sites at the handler's peak and at its end
(OUT.memory.txt). Both slow the run: their times are not the benchmark's.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[2]
TIMEOUTS = {"weekly_digest": 600.0, "deep_dive": 300.0, "organization_digest": 300.0}  # the template's
EVENTS = {
    "weekly_digest": {"costguard": "digest"},
    "deep_dive": {"costguard": "deep-dive"},
    "organization_digest": {"costguard": "organization-digest"},
}


class Context:
    memory_limit_in_mb = 1024
    aws_request_id = "bench"

    def __init__(self, function: str) -> None:
        self.function_name = f"costguard-{function.replace('_', '-')}"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"
        self.timeout = TIMEOUTS[function]
        self.started = time.monotonic()

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout - (time.monotonic() - self.started)) * 1000))


def peak_rss_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


class PeakSnapshots:
    """Under tracemalloc, a snapshot of the allocations each time the traced memory reaches a new high
    (checked every half second): what the process holds at its peak, by line."""

    def __init__(self) -> None:
        import threading  # noqa: PLC0415
        import tracemalloc  # noqa: PLC0415

        tracemalloc.start(int(os.environ.get("BENCH_TRACE_FRAMES", "1")))
        self.best, self.snapshot = 0, cast(Any, None)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        import tracemalloc  # noqa: PLC0415

        while not self.done.wait(0.5):
            current, _ = tracemalloc.get_traced_memory()
            if current > self.best * 1.2:
                self.best, self.snapshot = current, tracemalloc.take_snapshot()

    def report(self, path: Path) -> None:
        import tracemalloc  # noqa: PLC0415

        self.done.set()
        self.thread.join()
        current, peak = tracemalloc.get_traced_memory()
        lines = [f"traced at the end {current / 1e6:.1f} MB; traced peak {peak / 1e6:.1f} MB"]
        if self.snapshot is not None:
            lines += ["", f"held at the highest snapshot ({self.best / 1e6:.1f} MB), by line:"]
            lines += [str(s) for s in self.snapshot.statistics("lineno")[:30]]
            lines += ["", "the same, by traceback of the largest:"]
            for stat in self.snapshot.statistics("traceback")[:6]:
                lines += [f"{stat.size / 1e6:.1f} MB in {stat.count} blocks", *stat.traceback.format()[-14:], ""]
        lines += ["", "held at the end, by line:"]
        lines += [str(s) for s in tracemalloc.take_snapshot().statistics("lineno")[:20]]
        path.write_text("\n".join(lines) + "\n")


def main(function: str, out: str, profile: str = "") -> None:
    memory = PeakSnapshots() if profile == "memory" else None
    started = time.perf_counter()
    code = Path(os.environ.get("BENCH_CODE_ROOT") or ROOT)  # another tree's library and handlers (a capture)
    sys.path[:0] = [str(code / "layers" / "costguard"), str(code / "functions" / function)]
    import app  # type: ignore[import-not-found]  # noqa: PLC0415 (the import is what is timed)

    from costguard.runtime import Runtime  # noqa: PLC0415

    now = datetime.fromisoformat(os.environ["BENCH_NOW"])
    Runtime.now = staticmethod(lambda: now)  # type: ignore[method-assign]
    imported = time.perf_counter()
    result: dict[str, Any] = {"import_s": round(imported - started, 3)}
    profiler: Any = None
    if profile == "cpu":
        import cProfile  # noqa: PLC0415

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        answer = app.lambda_handler(EVENTS[function], Context(function))
        result["status"] = "done"
        result["answer"] = answer
    except Exception as exc:  # reported to the parent, which fails the benchmark
        result["status"] = "failed"
        result["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
    result["handler_s"] = round(time.perf_counter() - imported, 3)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(f"{out}.prof")
    if memory is not None:
        memory.report(Path(f"{out}.memory.txt"))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 2)
    result["peak_rss_mb"] = round(peak_rss_kb() / 1024, 1)
    Path(out).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--profile" else "")
