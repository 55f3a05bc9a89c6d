"""A count is written with its noun as a reader says it: never "machine(s)", anywhere costguard writes."""

from __future__ import annotations

import ast
from pathlib import Path

from costguard.core.formatting import plural

ROOT = Path(__file__).resolve().parents[3]


def test_a_count_takes_the_singular_for_one_and_the_plural_for_any_other() -> None:
    assert plural(1, "machine") == "1 machine"
    assert plural(0, "machine") == "0 machines"
    assert plural(2, "Studio setting") == "2 Studio settings"
    assert plural(1, "reply", "replies") == "1 reply"
    assert plural(3, "reply", "replies") == "3 replies"
    assert plural(1200, "GPU-hour") == "1,200 GPU-hours"


def strings_in(path: Path) -> list[str]:
    """The string constants of a module, each f-string read whole (its values as "{}")."""
    tree = ast.parse(path.read_text())
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append("".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            found.append(node.value)
    return found


def test_no_string_costguard_or_its_demo_writes_has_a_noun_with_a_bracketed_s() -> None:
    folders = [ROOT / "layers" / "costguard" / "costguard", ROOT / "functions", ROOT / "demo"]
    modules = [p for folder in folders for p in folder.rglob("*.py")]
    assert len(modules) > 100  # the scan reads the library, the handlers and the demo
    found = [
        f"{path.relative_to(ROOT)}: {text[:80]!r}"
        for path in modules
        for text in strings_in(path)
        if "(s)" in text or "(es)" in text
    ]
    assert not found, "write the plural (core/formatting.py's plural):\n" + "\n".join(found)
