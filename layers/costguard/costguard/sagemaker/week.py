"""The SageMaker week for the weekly digest: what runs on GPUs, its idle hours and their cost, the zombie
endpoints, what costguard did, and the hygiene (notebooks reporting nothing, Studio without idle shutdown).

Idle hours are counted only where they can be seen: a watched notebook instance's hours with its reports
(kernels, busiest core, GPU on an NVIDIA type) and no work in any of them; a Studio app's hours since the
later of its start, the week's start and the last user activity SageMaker reports (kept apart from its
health checks); an endpoint's full days without an invocation while its instances published metrics.
Hours without data are not counted as idle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from costguard.aws.clients import READ_ERRORS, error_code
from costguard.aws.pricing import PriceBook
from costguard.aws.sagemaker import SageMaker, SageMakerMetrics
from costguard.core.sagemaker import Resource
from costguard.core.settings import SageMakerPolicy
from costguard.sagemaker.rules.activity import app_activity, endpoint_activity
from costguard.sagemaker.rules.decision import unjudged
from costguard.sagemaker.rules.figures import LOOKBACK, SageMakerWeek, Zombie, idle_notebook_hours
from costguard.sagemaker.rules.shutdown import shutdown_findings
from costguard.sagemaker.words.messages import hourly_cost
from costguard.state.entries import Entry

HOUR = 3600


@dataclass
class SageMakerRegion:
    name: str
    api: SageMaker
    metrics: SageMakerMetrics


@dataclass
class WeekCollector:
    prices: PriceBook
    policy: SageMakerPolicy
    owner_tag_key: str

    def collect(
        self, regions: Sequence[SageMakerRegion], entries: Sequence[Entry], start: datetime, now: datetime
    ) -> SageMakerWeek:
        week = SageMakerWeek()
        week.count(entries)
        for region in regions:
            for part in (self._notebooks, self._apps, self._endpoints, self._settings):
                try:
                    part(region, week, start, now)
                except READ_ERRORS as exc:
                    week.errors.append(f"{region.name} {part.__name__.strip('_')}: {error_code(exc)}")
        return week

    def _hourly(self, resource: Resource) -> float:
        price = self.prices.sagemaker_hourly(resource.instance_type, resource.region, resource.kind.value)
        return hourly_cost(resource, price) or 0.0

    def _notebooks(self, region: SageMakerRegion, week: SageMakerWeek, start: datetime, now: datetime) -> None:
        notebooks = region.api.notebooks(self.policy.is_accelerated)
        week.notebooks += len(notebooks)
        watched = region.metrics.watched_notebooks() if notebooks else set()
        week.unwatched += sorted(n.name for n in notebooks if n.name not in watched)
        seen = [n.name for n in notebooks if n.name in watched]
        series = region.metrics.notebook_series(seen, start, now, period=HOUR)[0] if seen else {}
        for notebook in notebooks:
            hourly = self._hourly(notebook)
            week.daily_usd += hourly * 24
            if notebook.name in watched:
                hours = idle_notebook_hours(series.get(notebook.name), self.policy, notebook.instance_type)
                week.idle_hours += hours
                week.idle_usd += hours * hourly

    def _apps(self, region: SageMakerRegion, week: SageMakerWeek, start: datetime, now: datetime) -> None:
        apps = region.api.apps(self.policy.is_accelerated)
        week.apps += len(apps)
        for app in apps:
            hourly = self._hourly(app)
            week.daily_usd += hourly * 24
            since = max(app.since, start)
            if app_activity(app, start=since).idle:
                reported = app.last_user_activity if app.last_user_activity and app.last_user_activity > since else None
                hours = (now - (reported or since)).total_seconds() / HOUR
                week.idle_hours += hours
                week.idle_usd += hours * hourly

    def _endpoints(self, region: SageMakerRegion, week: SageMakerWeek, start: datetime, now: datetime) -> None:
        endpoints = [e for e in region.api.endpoints(self.policy.is_accelerated) if e.instances > 0]
        week.endpoints += len(endpoints)
        if not endpoints:
            return
        zombie_window = timedelta(days=self.policy.endpoint_idle_days)
        series, failed = region.metrics.endpoint_series(endpoints, now - LOOKBACK, min(start, now - zombie_window), now)
        for endpoint in endpoints:
            hourly = self._hourly(endpoint)
            week.daily_usd += hourly * 24
            if unjudged(endpoint):  # asynchronous, inference components, scales to zero: never a zombie
                continue
            since = max(start, endpoint.since)
            if endpoint_activity(endpoint, series, window_start=since, now=now, errors=failed).idle:
                days = (now - since).total_seconds() / 86_400
                week.zombie_days += days
                week.idle_usd += days * 24 * hourly
            zombie = endpoint_activity(endpoint, series, window_start=now - zombie_window, now=now, errors=failed)
            if zombie.idle and now - endpoint.since >= zombie_window:
                week.zombies.append(
                    Zombie(endpoint.name, endpoint.owner(self.owner_tag_key), hourly * 24, zombie.reason)
                )

    def _settings(self, region: SageMakerRegion, week: SageMakerWeek, _start: datetime, _now: datetime) -> None:
        found = shutdown_findings(region.api.idle_settings(), self.policy.studio_idle_minutes)
        week.idle_shutdown_off += sorted({f"{f.scope} {f.name}" for f in found})
