"""Work done region by region, where one region's outage must not stop the others'."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from costguard.core.observability import logger

T = TypeVar("T")


def each_region(regions: Sequence[str], work: Callable[[str], T], *, failed: str) -> tuple[dict[str, T], list[str]]:
    """What `work` returned in each region, and the regions it failed in ("region: Error: why"), each failure
    logged as `failed` with its traceback."""
    done: dict[str, T] = {}
    failures: list[str] = []
    for region in regions:
        try:
            done[region] = work(region)
        except Exception as exc:  # one region's outage must not stop the others' work
            logger.exception(failed, region=region)
            failures.append(f"{region}: {type(exc).__name__}: {exc}")
    return done, failures
