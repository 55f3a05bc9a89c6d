"""Shared benchmark plumbing: an API-call counter, cold-import timing, the machine's description."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


class CallCounter:
    """Counts every AWS API call made through sessions it is attached to, by service and operation."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def session(self) -> boto3.session.Session:
        session = boto3.session.Session()
        session.events.register("before-call.*.*", self._count)
        return session

    def _count(self, model: Any, **_: Any) -> None:
        self.calls[f"{model.service_model.service_name}:{model.name}"] += 1

    def reset(self) -> dict[str, int]:
        snapshot = dict(sorted(self.calls.items()))
        self.calls.clear()
        return snapshot


def cold_import_seconds(function: str, runs: int = 5, *, tracing: bool = True) -> dict[str, float]:
    """Import a handler in a fresh interpreter, as a Lambda cold start does (no network, env set). As in
    Lambda (LAMBDA_TASK_ROOT set): X-Ray's recorder then samples locally, and Powertools' Tracer is on
    (patching botocore) unless `tracing` is off (the Tracing parameter's Disabled)."""
    code = (
        "import time; t, c = time.perf_counter(), time.process_time(); import app; "
        "print(time.perf_counter() - t, time.process_time() - c)"
    )
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'layers' / 'costguard'}:{ROOT / 'functions' / function}",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": "costguard",
        "LAMBDA_TASK_ROOT": str(ROOT / "functions" / function),
        "AWS_LAMBDA_FUNCTION_NAME": f"costguard-{function}",
        "POWERTOOLS_TRACE_DISABLED": "false" if tracing else "true",
    }
    samples, cpu = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        wall, used = out.stdout.split()
        samples.append(float(wall))
        cpu.append(float(used))
    # The CPU time is the steadier figure on a shared machine: the wall time counts the other processes too.
    return {
        "median_s": round(statistics.median(samples), 3),
        "max_s": round(max(samples), 3),
        "cpu_median_s": round(statistics.median(cpu), 3),
        "runs": runs,
    }


def machine() -> dict[str, Any]:
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "system": platform.system(),
    }


def save(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **result}, indent=2, default=str) + "\n")
    return path


def built_sizes() -> dict[str, str]:
    """Unzipped size of each function and the layer as `sam build` left them (run `make build` first)."""
    build = ROOT / ".aws-sam" / "build"
    if not build.is_dir():
        return {"note": "no .aws-sam/build: run `make build` first"}
    sizes = {}
    for entry in sorted(build.iterdir()):
        if entry.is_dir():
            total = sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
            sizes[entry.name] = f"{total / 1_000_000:.2f} MB" if total > 100_000 else f"{total / 1000:.0f} KB"
    return sizes
