"""The library's shape: features live in packages, and no class is long enough to hide its jobs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import costguard

PACKAGE = Path(costguard.__file__).parent
MAX_CLASS_LINES = 150
TOP_LEVEL_MODULES = {"__init__.py", "runtime.py"}  # runtime wires the packages together for the handlers


def test_no_module_sits_at_the_top_of_the_package_but_the_runtime() -> None:
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert top == TOP_LEVEL_MODULES


def test_every_package_folder_is_a_package() -> None:
    for folder in PACKAGE.rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__":
            assert (folder / "__init__.py").exists(), folder


def test_no_class_in_the_library_is_longer_than_a_screenful() -> None:
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.name} ({lines} lines)")
    assert long == []


@pytest.mark.parametrize("feature", ["idle", "sagemaker"])
def test_the_rules_never_read_the_clock(feature: str) -> None:
    # Time comes in as an argument (`now`), so that a rule is a function of its inputs and its tests
    # never freeze clocks.
    readers = []
    for path in (PACKAGE / feature / "rules").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in {"now", "utcnow", "today", "time", "monotonic"}:
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id in {"datetime", "date", "time"}:
                    readers.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert readers == []
