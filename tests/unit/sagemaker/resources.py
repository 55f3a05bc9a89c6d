"""SageMaker resources, records and series as the unit tests build them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from costguard.core.sagemaker import Kind, Resource, Variant
from costguard.core.series import Signal
from costguard.core.settings import SageMakerPolicy
from costguard.sagemaker.rules.activity import endpoint_activity
from testing.handlers import load_event

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
POLICY = SageMakerPolicy()


def record(name: str) -> dict[str, Any]:
    return load_event(f"owner_tagger/{name}")["detail"]  # type: ignore[no-any-return]


def points(start: datetime, end: datetime, value: float, step: int = 5) -> list[tuple[datetime, float]]:
    out, at = [], start
    while at < end:
        out.append((at, value))
        at += timedelta(minutes=step)
    return out


def daily(days: int, value: float, skip: int | None = None, now: datetime = NOW) -> list[tuple[datetime, float]]:
    """A point per day at midnight, as CloudWatch answers a one-day period, for the `days` before today."""
    midnight = now.replace(hour=0)
    return [(midnight - timedelta(days=d), value) for d in range(1, days + 1) if d != skip]


def endpoint_resource(**kwargs: object) -> Resource:
    base: dict[str, Any] = {
        "kind": Kind.ENDPOINT,
        "name": "churn-v2",
        "region": "us-east-1",
        "arn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/churn-v2",
        "instance_type": "ml.g5.xlarge",
        "status": "InService",
        "since": NOW - timedelta(days=30),
        "config_name": "churn-v2-config",
        "variants": (Variant("AllTraffic", "ml.g5.xlarge", 2),),
        "tags": {"Owner": "bob@example.com"},
    }
    return Resource(**{**base, **kwargs})


def studio_app(**kwargs: object) -> Resource:
    base: dict[str, Any] = {
        "kind": Kind.APP,
        "name": "d-abc123def456/user.bob/JupyterLab/default",
        "region": "us-east-1",
        "arn": "arn:aws:sagemaker:us-east-1:123456789012:app/d-abc123def456/bob/jupyterlab/default",
        "instance_type": "ml.g5.2xlarge",
        "status": "InService",
        "since": NOW - timedelta(hours=20),
        "tags": {"Owner": "bob@example.com"},
    }
    return Resource(**{**base, **kwargs})


def notebook_resource(**kwargs: object) -> Resource:
    base: dict[str, Any] = {
        "kind": Kind.NOTEBOOK,
        "name": "alice-research",
        "region": "us-east-1",
        "arn": "arn:aws:sagemaker:us-east-1:123456789012:notebook-instance/alice-research",
        "instance_type": "ml.g5.xlarge",
        "status": "InService",
        "since": NOW - timedelta(days=5),
        "tags": {"Owner": "alice@example.com"},
    }
    return Resource(**{**base, **kwargs})


def idle(resource: Resource) -> object:
    start = NOW - timedelta(days=7)
    series = {"churn-v2/AllTraffic": {Signal.CPU: daily(8, 2.0)}}
    return endpoint_activity(resource, series, window_start=start, now=NOW)
