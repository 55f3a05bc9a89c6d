"""Tracing: every handler carries Powertools' Tracer in the fixed decorator order, the tests run with it
off, and, on as in Lambda, an invocation's AWS SDK calls and Slack calls reach X-Ray as subsegments."""

from __future__ import annotations

import ast
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from costguard.core.observability import traced, tracer
from testing.handlers import ROOT

FUNCTIONS = sorted(p.name for p in (ROOT / "functions").iterdir() if (p / "app.py").exists())
ORDER = ["logger.inject_lambda_context", "tracer.capture_lambda_handler", "metrics.log_metrics", "refuses_garbage"]


def decorators(function: str) -> list[ast.expr]:
    tree = ast.parse((ROOT / "functions" / function / "app.py").read_text())
    [handler] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "lambda_handler"]
    return handler.decorator_list


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_handler_is_traced_between_its_logger_and_its_metrics(function: str) -> None:
    found = decorators(function)
    names = [ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in found]
    assert names == ORDER[: len(names)]
    assert len(names) >= 3
    [capture] = [d for d in found if isinstance(d, ast.Call) and ast.unparse(d.func) == ORDER[1]]
    # A handler's summary names instances and owners: it stays out of the trace's metadata.
    assert [(k.arg, ast.unparse(k.value)) for k in capture.keywords] == [("capture_response", "False")]


def test_the_tests_run_with_tracing_off() -> None:
    assert os.environ["POWERTOOLS_TRACE_DISABLED"] == "true"
    assert tracer.disabled
    with traced("Slack chat.postMessage"):  # nothing to record into, nothing raised
        pass


# Run as Lambda runs it: LAMBDA_TASK_ROOT set, a trace header in _X_AMZN_TRACE_ID, the X-Ray daemon's
# address (here a UDP socket of the test's). A handler makes one AWS call (moto) and one Slack post.
TRACED_INVOCATION = """
import json
from concurrent.futures import ThreadPoolExecutor
from moto import mock_aws
import boto3
from costguard.core.observability import tracer
from costguard.slack.blocks import Message, section
from costguard.slack.notifier import SlackCredentials, SlackNotifier
from testing.slack_standin import SlackStandIn

slack = SlackStandIn().start()

@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    boto3.client("sqs", region_name="us-east-1").list_queues()
    notifier = SlackNotifier(SlackCredentials(bot_token=slack.token), base_url=slack.api_url)
    notifier.post("C0ALERTS", Message("hello", (section("hello"),)))
    with ThreadPoolExecutor(1) as pool:  # the sweep tells owners from worker threads
        pool.submit(notifier.post, "C0OTHER", Message("hello", (section("hello"),))).result()
    return {"secret": "not in the trace"}

with mock_aws():
    handler({}, None)
slack.stop()
print(json.dumps({"disabled": tracer.disabled, "posted": len(slack.messages)}))
"""


def test_an_invocation_sends_its_aws_and_slack_calls_to_x_ray_as_subsegments(tmp_path: Path) -> None:
    daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    daemon.bind(("127.0.0.1", 0))
    daemon.settimeout(5)
    port = daemon.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'layers' / 'costguard'}:{ROOT}",
        "LAMBDA_TASK_ROOT": str(tmp_path),
        "AWS_LAMBDA_FUNCTION_NAME": "costguard-test",
        "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{port}",
        "POWERTOOLS_TRACE_DISABLED": "false",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    run = subprocess.run(
        [sys.executable, "-c", TRACED_INVOCATION], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"disabled": False, "posted": 2}
    documents = []
    daemon.settimeout(0.5)
    try:
        while True:
            packet = daemon.recv(65536).decode()
            header, _, body = packet.partition("\n")
            assert json.loads(header) == {"format": "json", "version": 1}
            documents.append(json.loads(body))
    except TimeoutError:
        pass
    finally:
        daemon.close()
    names = {d["name"]: d for d in documents}
    slack = [d for d in documents if d["name"] == "Slack chat.postMessage"]
    # The worker thread's post too, under the function's own segment (X-Ray's facade in a new thread).
    assert sorted(d["parent_id"] for d in slack) == sorted([names["## handler"]["id"], "53995c3f42cd8ad8"])
    assert "## handler" in names  # the handler's own subsegment
    assert names["sqs"]["namespace"] == "aws"  # the AWS SDK call (botocore patched)
    assert names["sqs"]["aws"]["operation"] == "ListQueues"
    assert {d["namespace"] for d in slack} == {"remote"}  # the Slack calls, through the notifier's client
    assert names["sqs"]["parent_id"] == names["## handler"]["id"]
    assert {d["trace_id"] for d in documents} == {"1-5759e988-bd862e3fe1be46a994272793"}
    assert "not in the trace" not in json.dumps(documents)
    handler: Any = names["## handler"]
    assert handler["annotations"]["ColdStart"] is True
