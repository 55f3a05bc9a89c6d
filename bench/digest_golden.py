"""Capture what the weekly digest of a commit says (testing/runs/golden.py) into tests/fixtures/digest_golden.json:
`python -m bench.digest_golden --commit REV [--out PATH]` (its library and handlers, taken with `git archive`;
this tree's world and stand-ins). tests/integration/test_digest_golden.py holds the current code to it."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import ROOT
from testing.runs.golden import FIXTURE, capture
from testing.runs.handler import tree_of


def main(argv: list[str]) -> None:
    options = {argv[i]: argv[i + 1] for i in range(0, len(argv) - 1, 2)}
    commit = options.get("--commit")
    if not commit:
        raise SystemExit("usage: python -m bench.digest_golden --commit REV [--out PATH]")
    out = Path(options.get("--out", str(FIXTURE)))
    with tempfile.TemporaryDirectory() as tmp:
        captured = capture(tree_of(commit, Path(tmp)))
    sha = subprocess.run(["git", "rev-parse", commit], cwd=ROOT, capture_output=True, text=True, check=True)
    captured = {"commit": sha.stdout.strip(), **captured}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(captured, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"captured the digest of {captured['commit'][:10]} over {captured['instances']} machines: {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
