"""The SageMaker sweep in one region: read the GPU notebook instances, Studio apps and real-time endpoints and
what they did, decide, then warn, stop or delete (sagemaker.acts), and report Studio's idle shutdown
settings once a week.

A read that fails (a SageMaker API the region lacks, throttling after the retries) costs its part of the
sweep, said in the report, never the other parts; nothing unread is ever judged idle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.clients import READ_ERRORS, error_code
from costguard.aws.sagemaker import SageMaker, SageMakerMetrics
from costguard.core.errors import CostguardError
from costguard.core.formatting import plural
from costguard.core.observability import logger, metrics
from costguard.core.regions import each_region
from costguard.core.sagemaker import Resource
from costguard.core.settings import Mode, SageMakerPolicy
from costguard.sagemaker.acts import SageMakerActs
from costguard.sagemaker.rules.activity import Activity, app_activity, endpoint_activity, notebook_activity
from costguard.sagemaker.rules.decision import decide, judged_from
from costguard.sagemaker.rules.figures import LOOKBACK
from costguard.sagemaker.rules.report import SweepReport
from costguard.sagemaker.rules.shutdown import shutdown_findings
from costguard.sagemaker.words.messages import idle_settings_report
from costguard.state.claims import ClaimState

SETTINGS_TTL = timedelta(days=30)


class SageMakerSweep:
    def __init__(
        self,
        *,
        region: str,
        api: SageMaker,
        metrics: SageMakerMetrics,
        acts: SageMakerActs,
        policy: SageMakerPolicy,
        mode: Mode,
        time_left: Callable[[], float] | None = None,
    ) -> None:
        self.region = region
        self.api = api
        self.metrics = metrics
        self.acts = acts
        self.policy = policy
        self.mode = mode
        self.time_left = time_left or (lambda: float("inf"))

    def run(self, now: datetime) -> SweepReport:
        report = SweepReport(self.region)
        judged: list[tuple[Resource, Activity]] = []
        for read in (self._notebooks, self._endpoints, self._apps):
            try:
                judged += read(now, report)
            except READ_ERRORS as exc:  # one kind's failure must not cost the others their sweep
                logger.warning("sagemaker read failed", region=self.region, part=read.__name__, error=str(exc)[:300])
                report.errors.append(f"{read.__name__.strip('_')}: {error_code(exc)}")
        report.candidates = len(judged)
        for resource, activity in judged:
            decision = decide(resource, activity, self.policy, now, mode=self.mode)
            report.outcomes.append(self.acts.act(resource, decision, now))
        self._idle_settings(now, report)
        return report

    def _notebooks(self, now: datetime, report: SweepReport) -> list[tuple[Resource, Activity]]:
        notebooks = self.api.notebooks(self.policy.is_accelerated)
        watched = self.metrics.watched_notebooks() if notebooks else set()
        report.unwatched = sorted(n.name for n in notebooks if n.name not in watched)
        seen = [n for n in notebooks if n.name in watched]
        if not seen:
            return []
        start = min(judged_from(n, self.policy, now) for n in seen)
        series, failed = self.metrics.notebook_series([n.name for n in seen], start, now)
        return [
            (
                n,
                notebook_activity(
                    series.get(n.name),
                    start=judged_from(n, self.policy, now),
                    now=now,
                    policy=self.policy,
                    instance_type=n.instance_type,
                    error=failed.get(n.name, ""),
                ),
            )
            for n in seen
        ]

    def _endpoints(self, now: datetime, _report: SweepReport) -> list[tuple[Resource, Activity]]:
        endpoints = self.api.endpoints(self.policy.is_accelerated)
        if not endpoints:
            return []
        start = min(judged_from(e, self.policy, now) for e in endpoints)
        series, failed = self.metrics.endpoint_series(endpoints, now - LOOKBACK, start, now)
        return [
            (e, endpoint_activity(e, series, window_start=judged_from(e, self.policy, now), now=now, errors=failed))
            for e in endpoints
        ]

    def _apps(self, now: datetime, _report: SweepReport) -> list[tuple[Resource, Activity]]:
        apps = self.api.apps(self.policy.is_accelerated)
        return [(a, app_activity(a, start=judged_from(a, self.policy, now))) for a in apps]

    def _idle_settings(self, now: datetime, report: SweepReport) -> None:
        """Once a week per region: Studio settings without idle shutdown, posted to the alerts channel."""
        if self.mode is Mode.DRY_RUN or self.time_left() < 60:
            return  # dry-run posts only what it would do to resources; the digest lists these settings too
        claims = self.acts.claims
        claim = claims.claim(f"sagemaker-idle-settings:{self.region}:{now:%G-W%V}", now, ttl=SETTINGS_TTL)
        if claim.state is not ClaimState.TAKEN:
            return
        try:
            findings = shutdown_findings(self.api.idle_settings(), self.policy.studio_idle_minutes)
            if findings:
                self.acts.post_alert(idle_settings_report(findings, self.policy.studio_idle_minutes))
        except READ_ERRORS as exc:
            claims.release(claim)
            report.errors.append(f"idle settings: {error_code(exc)}")
            return
        except Exception:
            claims.release(claim)
            raise
        claims.done(claim)
        report.idle_settings_reported = len(findings)


class SweepIncomplete(CostguardError):
    """Some work failed in a way a retry can fix (Slack outage, throttling): fail so the run is retried."""


def sweep_regions(sweep_for: Callable[[str], SageMakerSweep], regions: Sequence[str], now: datetime) -> dict[str, Any]:
    """Every governed region swept; one region's outage does not stop the others', and fails the run at the end
    (with whatever else a retry can fix) so that the schedule retries it."""
    reports, failures = each_region(regions, lambda region: sweep_for(region).run(now), failed="sagemaker sweep failed")
    for report in reports.values():
        for action in ("warn", "act"):
            done = sum(1 for o in report.outcomes if o.action.value == action and o.applied)
            metrics.add_metric(name=f"SageMaker{action.title()}", unit=MetricUnit.Count, value=done)
    errors = failures + [e for r in reports.values() for e in r.retryable]
    if errors:
        raise SweepIncomplete(f"{plural(len(errors), 'action')} to retry: {errors[:5]}")
    return {k: v.summary() for k, v in reports.items()}
