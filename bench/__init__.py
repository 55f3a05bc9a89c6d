"""Benchmarks: `make bench` runs them all and writes bench/results/*.json, which the README reports."""

import os
import sys
from pathlib import Path

_LAYER = str(Path(__file__).resolve().parents[1] / "layers" / "costguard")
if _LAYER not in sys.path:
    sys.path.insert(0, _LAYER)

# Powertools reads these when costguard.observability is first imported, as Lambda sets them at start.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "costguard")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "costguard")
