"""The library's shape: features live in packages, every function and method fits on a screen, and no class
is an outlier.

A module has one purpose and a class one screen of responsibility: that is judged in review (issue 42), not
by a count a class can be squeezed under (methods turned into free functions taking the object, assignments
packed four to a line). What is counted is what a count tells honestly: a function or method a reader cannot
see whole, and a class so long that no review could call it one job."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import costguard

PACKAGE = Path(costguard.__file__).parent
SCREEN = 80  # lines: a function or method longer than this is not read whole
MAX_CLASS_LINES = 250  # an outlier's bound only: below it, whether a class does one job is judged in review
# Known functions longer than a screen, each with its way out. The list only shrinks: an entry that fits a
# screen again, or is gone, must leave it.
LONGER_THAN_A_SCREEN = {
    "digest/weekly/collection.py:DigestCollector.collect": "its reads and its tallies, one step each",
}
TOP_LEVEL_MODULES = {"__init__.py", "runtime.py"}  # runtime wires the packages together for the handlers


def test_no_module_sits_at_the_top_of_the_package_but_the_runtime() -> None:
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert top == TOP_LEVEL_MODULES


def test_every_package_folder_is_a_package() -> None:
    for folder in PACKAGE.rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__":
            assert (folder / "__init__.py").exists(), folder


def _lengths(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST, int]]:
    """Every class, function and method under `node`, by qualified name, with its length in lines."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            yield name, child, (child.end_lineno or child.lineno) - child.lineno + 1
            yield from _lengths(child, f"{name}.")
        else:
            yield from _lengths(child, prefix)


def _library() -> Iterator[tuple[str, ast.AST, int]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        for name, node, lines in _lengths(ast.parse(path.read_text())):
            yield f"{path.relative_to(PACKAGE)}:{name}", node, lines


def _functions_longer_than_a_screen() -> dict[str, int]:
    return {
        name: lines
        for name, node, lines in _library()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and lines > SCREEN
    }


def test_every_function_and_method_in_the_library_fits_on_a_screen() -> None:
    long = _functions_longer_than_a_screen()
    assert sorted(set(long) - set(LONGER_THAN_A_SCREEN)) == []


def test_a_known_long_function_that_fits_a_screen_again_leaves_the_list() -> None:
    long = _functions_longer_than_a_screen()
    assert sorted(set(LONGER_THAN_A_SCREEN) - set(long)) == []


def test_no_class_in_the_library_is_an_outlier_no_review_could_call_one_job() -> None:
    long = [
        f"{name} ({lines} lines)"
        for name, node, lines in _library()
        if isinstance(node, ast.ClassDef) and lines > MAX_CLASS_LINES
    ]
    assert long == []


def test_a_method_is_measured_in_its_class_and_a_long_one_is_found() -> None:
    source = "class A:\n    def short(self):\n        pass\n\n    def long(self):\n" + "        x = 1\n" * SCREEN
    found = {name: lines for name, _, lines in _lengths(ast.parse(source))}
    assert found == {"A": SCREEN + 5, "A.short": 2, "A.long": SCREEN + 1}


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


# What the state stores and the AWS adapters write with: none of it is called from the idle stopper's reads.
WRITES = {
    "write", "record", "record_many", "forget", "update", "add", "remove", "put_item", "update_item", "delete_item",
    "batch_write_item", "transact_write_items", "create_tags", "delete_tags", "stop", "start",
}  # fmt: skip


# The one write a read makes, and why: IAM lets costguard run its activity check only on a machine that carries
# the check's tag (and lets it write that tag only on the accelerator families): asking is tagging.
ASKING = {"idle/reads/checks.py create_tags"}


def test_the_idle_stoppers_reads_never_write() -> None:
    """The reads take facts in; what the sweep keeps of them is written by its acts (idle/acts/kept.py)."""
    writes = []
    for path in sorted((PACKAGE / "idle" / "reads").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            # `self.log.add(...)`, `self.starts.update(...)`: a store's method; `results.update(...)` is a dict's.
            store = isinstance(node.func.value, ast.Attribute)
            if node.func.attr in WRITES and store and f"{path.relative_to(PACKAGE)} {node.func.attr}" not in ASKING:
                writes.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.func.attr}")
    assert writes == []
