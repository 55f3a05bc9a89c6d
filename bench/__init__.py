"""Benchmarks: `make bench` runs them all and writes bench/results/*.json, which docs/benchmarks.md reports."""

import os

# Quiet logs, set before `testing` fills in the rest of the Powertools settings and puts the layer on the path.
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")

import testing  # noqa: F401
