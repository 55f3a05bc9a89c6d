"""What tests, the demo and the benchmarks share: moto fixes, the AWS and Slack stand-ins, the local
account, event and handler loaders. The library never imports it."""

import os
import sys
from pathlib import Path

# In Lambda the costguard layer is on the path (/opt/python); locally it is layers/costguard.
_LAYER = str(Path(__file__).resolve().parents[1] / "layers" / "costguard")
if _LAYER not in sys.path:
    sys.path.insert(0, _LAYER)

# Powertools reads these when costguard.observability is first imported, as Lambda sets them at start.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "costguard")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "INFO")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "costguard")
# No X-Ray daemon here: the tests, the demo and the benchmarks run as a deploy with Tracing Disabled.
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
