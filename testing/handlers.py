"""Events and handlers by name: events/<path> as fresh copies, functions/<name>/app.py as modules."""

from __future__ import annotations

import copy
import importlib.util
import json
import time
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ROOT / "events"


@cache
def _read_event(name: str) -> Any:
    return json.loads((EVENTS / name).read_text())


def load_event(name: str) -> Any:
    """A fresh copy of events/<name> (tests may change it)."""
    return copy.deepcopy(_read_event(name))


@cache
def load_handler(function: str) -> ModuleType:
    """functions/<function>/app.py as a module of its own (every function's file is called app.py)."""
    path = ROOT / "functions" / function / "app.py"
    spec = importlib.util.spec_from_file_location(f"costguard_functions_{function}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class LambdaContext:
    """What Lambda hands a handler: its name, memory, ARN, request id, and the time it has left."""

    function_name = "costguard-test"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:costguard-test"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def __init__(self, timeout_seconds: float = 300.0) -> None:
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))
