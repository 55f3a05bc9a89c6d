"""Every test: fake AWS credentials, moto's fixes, and a Lambda context."""

from __future__ import annotations

import pytest

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
