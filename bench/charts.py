"""The three charts' render time: the first in a fresh interpreter (Pillow's import and the font's load
included, what a digest's cold start pays once) and then warm, with each PNG's size."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from bench.common import ROOT, save
from costguard.digest.chart import BLUE, DOLLARS, GREY, Bar, Series, bar_chart, day_label, month_label, week_chart

TODAY = date(2026, 11, 23)
# As the digests draw them: each day's idle cost over its bar, today so far marked, a source line.
WEEK = [
    Bar(day_label(TODAY - timedelta(days=6 - n), TODAY), used, idle, idle * 2.4, "to 09:00" if n == 6 else "")
    for n, (used, idle) in enumerate([(310, 120), (402, 95), (388, 140), (295, 210), (180, 260), (60, 300), (240, 110)])
]
ORGANIZATION = [
    Bar(day_label(TODAY - timedelta(days=7 - n), TODAY), 1_200.0 * (n + 2), 300.0 * (8 - n), 720.0 * (8 - n),
        "to 09:00" if n == 7 else "")
    for n in range(8)
]  # fmt: skip
SOURCE = "Source: CloudWatch, each machine's GPU and CPU use hour by hour; idle hours priced on the bill. Days in UTC."
QUARTER = [
    (month_label(date(2026, m, 1)), a, o) for m, a, o in ((8, 14_000, 1_000), (9, 15_000, 1_200), (10, 24_500, 900))
]


def weekly() -> bytes:
    return week_chart(WEEK, source=SOURCE)


def organization() -> bytes:
    return week_chart(ORGANIZATION, "GPU-hours a day across the organization, used and idle", source=SOURCE)


def deep_dive() -> bytes:
    return bar_chart(
        QUARTER,
        title="EC2 compute cost a month, 2026 Q3",
        series=(Series("Accelerated types", BLUE), Series("Other EC2", GREY)),
        unit=DOLLARS,
        source="Source: Cost Explorer, EC2 compute cost by month and instance type.",
    )


CHARTS: dict[str, Callable[[], bytes]] = {
    "weekly_digest": weekly,
    "organization_digest": organization,
    "deep_dive": deep_dive,
}


def first_render_seconds(name: str, runs: int = 5) -> list[float]:
    code = (
        "import time; from bench import charts; t = time.perf_counter(); "
        f"charts.CHARTS[{name!r}](); print(time.perf_counter() - t)"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers' / 'costguard'}:{ROOT}"}
    return [
        float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
        for _ in range(runs)
    ]


def main() -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, draw in CHARTS.items():
        first = first_render_seconds(name)
        draw()
        wall, cpu = [], []
        for _ in range(20):
            started, started_cpu = time.perf_counter(), time.process_time()
            png = draw()
            wall.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        result[name] = {
            "first_render_median_ms": round(statistics.median(first) * 1000, 1),
            "warm_render_median_ms": round(statistics.median(wall) * 1000, 1),
            "warm_render_max_ms": round(max(wall) * 1000, 1),
            "warm_render_cpu_median_ms": round(statistics.median(cpu) * 1000, 1),
            "png_bytes": len(png),
        }
    path = save("charts", {"charts": result})
    print(f"charts ({path.name}): first render in a fresh interpreter (Pillow's import included), then warm")
    for name, figures in result.items():
        first, warm = figures["first_render_median_ms"], figures["warm_render_median_ms"]
        print(
            f"  {name:<20} first {first:.0f} ms, warm {warm:.0f} ms (max {figures['warm_render_max_ms']:.0f}, "
            f"CPU {figures['warm_render_cpu_median_ms']:.0f}), {figures['png_bytes']:,} bytes"
        )
    return result


if __name__ == "__main__":
    main()
