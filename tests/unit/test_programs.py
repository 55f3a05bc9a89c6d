"""The programs of programs/ run on the machines' own python3: 3.6 on Ubuntu 18.04, 3.7 on Amazon Linux 2. They
must parse as Python 3.6 and call nothing 3.7 added that they are known to be tempted by, on any machine (the
tests under tests/programs run them on 3.6 and 3.7 where pyenv has those)."""

from __future__ import annotations

import ast

import pytest

from scripts.render_template import PROGRAMS, Program

OLDEST = (3, 6)
# subprocess.run's capture_output= and text= came with 3.7: 3.6 has stdout=PIPE and universal_newlines=.
NEWER_KEYWORDS = ("capture_output", "text")
# Methods 3.7 added that a program may reach for: datetime's ISO parsing, time in nanoseconds.
NEWER_METHODS = ("fromisoformat", "time_ns", "monotonic_ns", "perf_counter_ns")


def too_new(source: str) -> list[str]:
    """What in `source` Python 3.6 could not run: its syntax, or the calls above."""
    try:
        tree = ast.parse(source, feature_version=OLDEST)
    except SyntaxError as error:
        return [f"syntax: {error.msg}"]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += [f"{k.arg}=" for k in node.keywords if k.arg in NEWER_KEYWORDS]
        if isinstance(node, ast.Attribute) and node.attr in NEWER_METHODS:
            found.append(node.attr)
    return found


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.path.name)
def test_each_program_is_python_3_6(program: Program) -> None:
    assert too_new(program.path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("if (n := 1):\n    pass\n", "syntax"),
        ("subprocess.run(['ls'], capture_output=True)\n", "capture_output="),
        ("subprocess.run(['ls'], stdout=PIPE, text=True)\n", "text="),
        ("datetime.datetime.fromisoformat(stamp)\n", "fromisoformat"),
    ],
)
def test_what_python_3_6_cannot_run_is_found(source: str, why: str) -> None:
    assert [w for w in too_new(source) if w.startswith(why)]
