"""The notebook reporter (programs/notebook_reporter.py) itself, run as its cron job runs it on a notebook instance
(`python costguard-activity.py`), here with `--print`: what it would publish, read from a local Jupyter server of
the test's, a /proc/stat and its state file; its paths taken from its COSTGUARD_* environment variables."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from costguard.aws.sagemaker import CORE_METRIC, KERNEL_METRIC, NOTEBOOK_NAMESPACE
from scripts.render_template import PROGRAMS
from tests.programs.test_activity_check import OLD_PYTHONS

REPORTER = PROGRAMS[1].path


class _Jupyter(http.server.BaseHTTPRequestHandler):
    answers: ClassVar[dict[str, Any]] = {}

    def do_GET(self) -> None:
        body = json.dumps(self.answers.get(self.path, [])).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def jupyter() -> Iterator[tuple[str, type[_Jupyter]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Jupyter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Jupyter
    server.shutdown()


def run_reporter(url: str, tmp_path: Path, python: str = sys.executable) -> dict[str, Any]:
    metadata = tmp_path / "resource-metadata.json"
    arn = "arn:aws:sagemaker:eu-west-1:123456789012:notebook-instance/alice-research"
    metadata.write_text(json.dumps({"ResourceName": "alice-research", "ResourceArn": arn}))
    stat = tmp_path / "stat"
    if not stat.exists():
        stat.write_text("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 5 0 5 40 0 0 0 0 0 0\n")
    ran = subprocess.run(
        [python, str(REPORTER), "--print"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={
            "COSTGUARD_JUPYTER_URL": url,
            "COSTGUARD_METADATA": str(metadata),
            "COSTGUARD_PROC_STAT": str(stat),
            "COSTGUARD_STATE": str(tmp_path / "cpu-state.json"),
            "PATH": "/usr/bin:/bin",
        },
    )
    return json.loads(ran.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_reporter_reports_the_busiest_cores_use_since_its_last_report(jupyter: Any, tmp_path: Path) -> None:
    url, server = jupyter
    server.answers = {"/api/kernels": [{"execution_state": "idle", "last_activity": "2020-01-01T00:00:00.000000Z"}]}
    # The previous report's counters, 5 minutes ago (its state file), then /proc/stat now: cpu1 ran a job
    # outside any kernel (busy 285 of 300 jiffies), cpu0 idled (busy 6 of 300).
    before = {"at": time.time() - 300, "cores": {"cpu0": [10, 60], "cpu1": [10, 60]}}
    (tmp_path / "cpu-state.json").write_text(json.dumps(before))
    (tmp_path / "stat").write_text(
        "cpu  300 0 11 408 1 0 0 0 0 0\ncpu0 13 0 3 344 0 0 0 0 0 0\ncpu1 287 0 8 64 1 0 0 0 0 0\n"
    )
    printed = run_reporter(url, tmp_path)
    [core] = [d for d in printed["MetricData"] if d["MetricName"] == CORE_METRIC]
    assert core["Value"] == pytest.approx(95.0)
    assert core["Unit"] == "Percent"
    assert kernel_values(printed) == [0]
    saved = json.loads((tmp_path / "cpu-state.json").read_text())
    assert saved["cores"]["cpu1"] == [295, 360], "the next report measures from these"


def kernel_values(printed: dict[str, Any]) -> list[float]:
    assert printed["Namespace"] == NOTEBOOK_NAMESPACE
    assert printed["Region"] == "eu-west-1"
    return [d["Value"] for d in printed["MetricData"] if d["MetricName"] == KERNEL_METRIC]


def test_the_reporter_reports_a_busy_kernel_as_work(jupyter: Any, tmp_path: Path) -> None:
    url, server = jupyter
    server.answers = {"/api/kernels": [{"execution_state": "busy", "last_activity": "2020-01-01T00:00:00.000000Z"}]}
    assert kernel_values(run_reporter(url, tmp_path)) == [1]


def test_the_reporter_reports_quiet_kernels_and_terminals_as_none_at_work(jupyter: Any, tmp_path: Path) -> None:
    url, server = jupyter
    server.answers = {
        "/api/kernels": [{"execution_state": "idle", "last_activity": "2020-01-01T00:00:00.000000Z"}],
        "/api/terminals": [{"name": "1", "last_activity": "2020-01-01T00:00:00.000000Z"}],
    }
    printed = run_reporter(url, tmp_path)
    assert kernel_values(printed) == [0]
    # No nvidia-smi on this machine: no GPU figure is made up.
    assert [d["MetricName"] for d in printed["MetricData"]] == [KERNEL_METRIC]


def test_the_reporter_reports_nothing_when_jupyter_cannot_be_read(tmp_path: Path) -> None:
    printed = run_reporter("http://127.0.0.1:9", tmp_path)  # nothing listens there
    assert kernel_values(printed) == []  # a gap, which costguard reads as missing data, never as idle


@pytest.mark.parametrize("python", OLD_PYTHONS or [pytest.param("", marks=pytest.mark.skip("no Python 3.6/3.7 here"))])
def test_the_reporter_runs_on_the_python_3_of_amazon_linux_2_and_ubuntu_18_04(
    jupyter: Any, tmp_path: Path, python: str
) -> None:
    # The lifecycle script falls back on /usr/bin/python3 where the notebook's own Pythons lack boto3.
    url, server = jupyter
    server.answers = {"/api/kernels": [{"execution_state": "busy", "last_activity": "2020-01-01T00:00:00.000000Z"}]}
    before = {"at": time.time() - 300, "cores": {"cpu0": [10, 60], "cpu1": [10, 60]}}
    (tmp_path / "cpu-state.json").write_text(json.dumps(before))
    (tmp_path / "stat").write_text(
        "cpu  300 0 11 408 1 0 0 0 0 0\ncpu0 13 0 3 344 0 0 0 0 0 0\ncpu1 287 0 8 64 1 0 0 0 0 0\n"
    )
    printed = run_reporter(url, tmp_path, python)
    assert kernel_values(printed) == [1]
    assert [(d["MetricName"], d["Value"]) for d in printed["MetricData"]] == [(KERNEL_METRIC, 1), (CORE_METRIC, 95.0)]
