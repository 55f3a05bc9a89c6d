"""Every test: fake AWS credentials, moto's fixes, and a Lambda context."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto.cloudwatch.models import CloudWatchBackend

from testing import moto_fixes
from testing.handlers import LambdaContext

moto_fixes.apply()  # AWS's wildcard filters, in every test that uses moto


@pytest.fixture
def lambda_context() -> LambdaContext:
    return LambdaContext()


@pytest.fixture(autouse=True)
def _no_real_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials everywhere: no test can reach a real account by accident."""
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "costguard")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "costguard")


@pytest.fixture
def indexed_metrics() -> Iterator[None]:
    """moto's GetMetricData indexed for this test only (testing/moto_fixes.index_metric_queries, as the demo
    and the benchmarks run it): a test of many machines' metrics takes seconds instead of minutes. The
    other tests keep moto's own, so costguard's handling of its listings stays exercised."""
    if getattr(CloudWatchBackend, "_costguard_at_scale", False):  # indexed for the whole process already
        yield
        return
    saved = {name: CloudWatchBackend.__dict__[name] for name in ("get_metric_data", "get_filtered_metrics")}
    moto_fixes.index_metric_queries()
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(CloudWatchBackend, name, original)
        if "_costguard_at_scale" in CloudWatchBackend.__dict__:
            delattr(CloudWatchBackend, "_costguard_at_scale")
