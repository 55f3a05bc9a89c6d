"""The fuzz counts docs/security.md reports: tests/faults/test_fuzz_handlers.py run in a child pytest whose
temporary directory is this benchmark's, its fuzz.json read back and saved as bench/results/fuzz.json
(the test itself writes only under pytest's temporary directory)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import ROOT

TEST = "tests/faults/test_fuzz_handlers.py"


def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "pytest"
        run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={base}", TEST]
        subprocess.run(run, check=True, cwd=ROOT)
        counts: dict[str, Any] = json.loads((base / "fuzz.json").read_text())
    for function, figures in counts.items():
        print(f"  {function:<20} {figures}")
    return counts
