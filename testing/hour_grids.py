"""A digest's hour grid made from whole hourly series at once, as the digest's tests write them. The digest
itself folds each series in as it is read (costguard.digest.weekly.rules.figures.HourFolder), so that no
point outlives its answer."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from costguard.digest.weekly.rules.grid import HourFolder, HourGrid


def hours_from_points(
    cpu: Sequence[tuple[datetime, float]],
    gpu_max: Sequence[Sequence[tuple[datetime, float]]],
    gpu_avg: Sequence[Sequence[tuple[datetime, float]]],
    busy_percent: float = 5.0,
    core: Sequence[tuple[datetime, float]] = (),
) -> HourGrid:
    """Hourly samples from hourly series: CPU Maximum, per GPU its Maximum and Average, and the busiest
    core's Maximum where the agent publishes it."""
    times = [at for at, _ in cpu]
    if not times:
        return HourFolder(datetime.min.replace(tzinfo=UTC), 0, 0).grid()
    origin = min(times)
    folder = HourFolder(origin, int((max(times) - origin).total_seconds() // 3600) + 1, len(gpu_max), busy_percent)
    folder.add_cpu(cpu)
    folder.add_core(core)
    for series in gpu_max:
        folder.add_gpu_max(series)
    for series in gpu_avg:
        folder.add_gpu_avg(series)
    return folder.grid()
