"""The digest's SageMaker week (sagemaker/week): only what was seen idle counts."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from costguard.aws.pricing import PriceBook
from costguard.core.sagemaker import IdleSetting, Resource
from costguard.core.series import Signal
from costguard.core.settings import SageMakerPolicy
from costguard.sagemaker.week import SageMakerRegion, WeekCollector
from tests.unit.sagemaker.resources import (
    NOW,
    daily,
    endpoint_resource,
    notebook_resource,
    studio_app,
)


class FakeApi:
    """What WeekCollector reads of SageMaker, as records (no I/O)."""

    def __init__(self, notebooks: list[Resource], endpoints: list[Resource], apps: list[Resource]) -> None:
        self._notebooks, self._endpoints, self._apps = notebooks, endpoints, apps

    def notebooks(self, wanted: Any) -> list[Resource]:
        return [r for r in self._notebooks if wanted(r.instance_type)]

    def endpoints(self, wanted: Any) -> list[Resource]:
        return [r for r in self._endpoints if any(wanted(v.instance_type) for v in r.variants)]

    def apps(self, wanted: Any) -> list[Resource]:
        return [r for r in self._apps if wanted(r.instance_type)]

    def idle_settings(self) -> list[IdleSetting]:
        return []


class FakeMetrics:
    def __init__(self, notebooks: dict[str, Any], endpoints: dict[str, Any]) -> None:
        self.notebooks, self.endpoints = notebooks, endpoints

    def watched_notebooks(self) -> set[str]:
        return set(self.notebooks)

    def notebook_series(self, names: Any, start: datetime, end: datetime, period: int = 300) -> Any:
        return {n: self.notebooks[n] for n in names}, {}

    def endpoint_series(self, endpoints: Any, start: datetime, window_start: datetime, end: datetime) -> Any:
        return self.endpoints, {}


def test_the_digest_week_counts_only_what_it_saw_idle_and_names_only_judged_zombies() -> None:
    hours = [(NOW - timedelta(hours=h), 0.0) for h in range(1, 11)]
    cores = [(NOW - timedelta(hours=h), 80.0 if h == 3 else 2.0) for h in range(1, 11)]
    zombie = endpoint_resource()
    asynchronous = endpoint_resource(name="batchy", asynchronous=True)
    cpu_only = {Signal.CPU: daily(8, 2.0)}
    checked = NOW - timedelta(minutes=3)
    unseen_app = studio_app(last_health_check=checked, last_user_activity=checked)
    region = SageMakerRegion(
        "us-east-1",
        FakeApi([notebook_resource()], [zombie, asynchronous], [unseen_app]),  # type: ignore[arg-type]
        FakeMetrics(  # type: ignore[arg-type]
            {"alice-research": {Signal.KERNEL_ACTIVITY: hours, Signal.GPU: hours, Signal.BUSIEST_CORE: cores}},
            {"churn-v2/AllTraffic": cpu_only, "batchy/AllTraffic": cpu_only},
        ),
    )
    prices = PriceBook(None)
    week = WeekCollector(prices, SageMakerPolicy(), "Owner").collect([region], [], NOW - timedelta(days=7), NOW)
    assert (week.notebooks, week.endpoints, week.apps) == (1, 2, 1)
    assert [z.name for z in week.zombies] == ["churn-v2"], "an asynchronous endpoint publishes no Invocations"
    assert week.idle_hours == 9, "the notebook's quiet reported hours (one had a busy core); the unseen app's none"
    assert week.zombie_days == 7
