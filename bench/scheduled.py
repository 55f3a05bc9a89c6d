"""The other scheduled digests as Lambda runs them, each handler whole in a fresh interpreter, at its scale:
`deep_dive` over a payer account's quarter (testing/worlds/scheduled.py: 300 accounts, 120 instance types
in 16 regions, 1,500 owners, 60 teams, Cost Anomaly Detection on, three governed regions), and
`organization_digest` at a hub whose figures queue holds 100 accounts' weeks and two letters to refuse.

The same measures as bench/digest_whole.py (wall at 0 and 30 ms a call, CPU, peak RSS, calls by
operation against a floor), the same stand-ins (testing/aws/scheduled.py; the Slack stand-in with
Slack's limits). `python -m bench.scheduled [--latency S] [--commit REV] [--save NAME]`.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import ROOT, save
from bench.digest_whole import load
from testing.runs.handler import tree_of
from testing.runs.scheduled import run_deep_dive, run_organization

LATENCIES = (0.0, 0.03)


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
