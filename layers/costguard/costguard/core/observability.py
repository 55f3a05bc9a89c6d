"""Logger and Metrics, defined once. Service name and level come from POWERTOOLS_* variables."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics

logger = Logger()
metrics = Metrics(namespace="costguard")
