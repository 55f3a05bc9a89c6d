"""The slim service models (aws/operations.py) hold every operation, paginator and waiter costguard names.

The scan is by name, over the library and the handlers: every method called on any object, and every
string, that is an operation's Python name in one of the slimmed services counts as called on it (more than
is called, never less). A slim client would still make the call through its full model, at a cost in memory:
this test is what keeps that from happening unseen.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import botocore.session
from botocore import xform_name
from botocore.exceptions import DataNotFoundError

from costguard.aws.operations import OPERATIONS

ROOT = Path(__file__).resolve().parents[3]
CODE = (ROOT / "layers" / "costguard" / "costguard", ROOT / "functions")


@cache
def named_in_code() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The names the code calls as methods, the strings it holds, and the waiters it asks for."""
    methods: set[str] = set()
    strings: set[str] = set()
    waiters: set[str] = set()
    for root in CODE:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    methods.add(node.func.attr)
                    if node.func.attr == "get_waiter" and node.args and isinstance(node.args[0], ast.Constant):
                        waiters.add(str(node.args[0].value))
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    strings.add(node.value)
    return frozenset(methods), frozenset(strings), frozenset(waiters)


def waited_on(session: botocore.session.Session, service: str, waiters: frozenset[str]) -> set[str]:
    """The operations the service's waiters the code asks for call."""
    try:
        model = session.get_waiter_model(service)
    except DataNotFoundError:  # a service without waiters
        return set()
    by_python_name = {xform_name(name): name for name in model.waiter_names}
    return {model.get_waiter(by_python_name[name]).operation for name in waiters & by_python_name.keys()}


def test_the_scan_finds_the_calls_it_is_meant_to_find() -> None:
    methods, strings, _ = named_in_code()
    assert {"get_metric_data", "stop_instances", "put_item"} <= methods
    assert {"describe_instances", "list_metrics"} <= strings  # paginators are asked by name


def test_every_operation_the_code_names_is_in_its_services_slim_model() -> None:
    methods, strings, waiters = named_in_code()
    session = botocore.session.get_session()
    missing: dict[str, set[str]] = {}
    for service, kept in OPERATIONS.items():
        model = session.get_service_model(service)
        by_python_name = {xform_name(name): name for name in model.operation_names}
        named = {by_python_name[name] for name in (methods | strings) & by_python_name.keys()}
        named |= waited_on(session, service, waiters)
        if named - kept:
            missing[service] = named - kept
    assert missing == {}


def test_every_slim_operation_is_one_of_its_services() -> None:
    session = botocore.session.get_session()
    unknown = {
        service: kept - set(session.get_service_model(service).operation_names) for service, kept in OPERATIONS.items()
    }
    assert {service: names for service, names in unknown.items() if names} == {}
