"""One idle_stopper sweep in a fresh interpreter, the way Lambda runs it: `python -m bench.sweep_child OUT.json`.

The parent sets the Lambda environment (AWS_ENDPOINT_URL pointing at moto or the stand-in) and
measures the process (wall time, peak RSS); this writes what only the process can see: the import
time, the handler's own time and its summary.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class Context:
    function_name = "costguard-idle-stopper"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:costguard-idle-stopper"
    aws_request_id = "bench"

    def __init__(self) -> None:
        self.started = time.monotonic()

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((300.0 - (time.monotonic() - self.started)) * 1000))  # the sweep's 300 s timeout


def main(out: str) -> None:
    started = time.perf_counter()
    sys.path[:0] = [str(ROOT / "layers" / "costguard"), str(ROOT / "functions" / "idle_stopper")]
    import app  # type: ignore[import-not-found]  # noqa: PLC0415 (the import is what is timed)

    imported = time.perf_counter()
    result: dict[str, Any] = {"import_s": round(imported - started, 3)}
    try:
        answer = app.lambda_handler({"costguard": "sweep"}, Context())
        result["status"] = answer["status"]
        result["regions"] = {
            region: {
                "candidates": r["candidates"],
                "actions": r["actions"],
                "stopped": r["stopped"],
                "deferred": len(r.get("deferred", [])),  # Slack work left to the next sweep (time ran short)
                "left": len(r.get("errors", [])),
            }
            for region, r in answer["regions"].items()
        }
    except Exception as exc:  # reported to the parent, which fails the benchmark
        result["status"] = "failed"
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["sweep_s"] = round(time.perf_counter() - imported, 3)
    Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
