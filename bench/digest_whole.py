"""The weekly digest as Lambda runs it: the whole `weekly_digest` handler in a fresh interpreter per run
(imports, collection, advice, dashboards, the records and the hand-over, the channel post with its chart
and every owner's direct message), over an account of 1,000 and 10,000 GPU machines (testing/worlds/digest.py:
a fortnight of hourly CPU and per-GPU metrics, 200 owners, 20 teams, the template's defaults with the
activity check on and a hub to hand the week to).

The run is testing/runs/weekly_digest.py. AWS is testing/aws/digest.py, Slack the Slack stand-in
enforcing Slack's limits (Tier 2 and 3 a
minute, one post a second per channel, each refusal a 429 with its Retry-After), both in this process
over HTTP, both answering after the same injected latency (0 and 30 ms a call). Reported per run: wall
time, the child's CPU seconds (imports included) and peak RSS, AWS calls and Slack calls by operation,
and each operation against its floor (`floor`): what any implementation needs, derived from the account.

`python -m bench.digest_whole [N ...] [--latency S] [--commit REV] [--save NAME] [--profile cpu|memory]`
runs chosen sizes, of this tree or of the commit REV (its library and handlers; this tree's account and
stand-ins), and saves bench/results/NAME.json; `make bench` runs them all into digest_whole.json.
`--against BASE [--rounds K]` runs each size K times (2 unless told) on the tree and K times on BASE, one after
the other in turn, and reports each side's range of CPU seconds and peak RSS: on a shared machine the load
drifts, and runs taken in turn see the same drift.
bench/results/digest_whole_before.json is the commit before the digest's performance work (issue 27).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import ROOT, save
from testing.runs.handler import tree_of
from testing.runs.weekly_digest import run_weekly

SIZES = (1_000, 10_000)
LATENCIES = (0.0, 0.03)


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


def alternate(sizes: tuple[int, ...], latency: float, code: Path | None, base: Path, rounds: int) -> dict[str, Any]:
    """Each size `rounds` times on `code` (None: this tree) and on `base`, in turn; each side's ranges."""
    result: dict[str, Any] = {"alternated": []}
    for n in sizes:
        sides: dict[str, list[dict[str, Any]]] = {"tree": [], "base": []}
        for _ in range(rounds):
            for side, tree in (("tree", code), ("base", base)):
                before = load()
                run = run_weekly(n, latency, code=tree)
                run["load_before"], run["load_after"] = before, load()
                print(f"  {side}:", end="")
                show(run)
                sides[side].append(run)
        for side, runs in sides.items():
            cpu, peak = [r["cpu_s"] for r in runs], [r["peak_rss_mb"] for r in runs]
            print(f"  {n:,} machines, {side}: CPU {min(cpu)}-{max(cpu)} s, peak {min(peak)}-{max(peak)} MB")
        result["alternated"].append({"instances": n, **sides})
    return result


if __name__ == "__main__":
    args = sys.argv[1:]
    options = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    profile = options.get("--profile", "")
    chosen = (float(options["--latency"]),) if "--latency" in options else LATENCIES
    numbers = tuple(int(a) for a in args if a.isdigit() and a not in options.values())
    with tempfile.TemporaryDirectory() as tmp:
        commit = options.get("--commit")
        tree = tree_of(commit, Path(tmp)) if commit else None
        if "--against" in options:
            base = tree_of(options["--against"], Path(tmp) / "base")
            rounds = int(options.get("--rounds", "2"))
            outcome = alternate(numbers or SIZES, chosen[0], tree, base, rounds)
            if "--save" in options:
                print(f"  saved {save(options['--save'], outcome)}")
        elif profile:
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
