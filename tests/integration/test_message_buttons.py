"""Buttons only where they act, and the fewest that serve (issue 46, item 4), over every message the demo posts or
edits (its demo-output/said.json) and, through the `slack` fixture of tests/integration/conftest.py, every message
the integration suites send the Slack stand-in: at most four buttons in a row, the rest in an overflow menu; no keep
where costguard will not stop or delete; Stop now wherever a keep is offered (testing/message_buttons.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from costguard.slack.blocks import actions, section
from costguard.slack.buttons import laid_out, warning_buttons, why_button
from costguard.slack.live import Live, Part
from testing.message_buttons import offered, problems

ROOT = Path(__file__).resolve().parents[2]


def said(*blocks: Any) -> list[tuple[str, dict[str, Any]]]:
    return [("chat.postMessage", {"text": "x", "blocks": list(blocks)})]


def test_the_rule_finds_a_row_of_too_many_buttons_a_keep_without_stop_now_and_a_keep_where_nothing_is_stopped() -> None:
    every = warning_buttons("i-0123456789abcdef0", "us-east-1", True, start_at="2026-11-22T05:00:00Z", for_runs=True)
    assert problems(said(section("idle"), actions("a", every))) == [
        "#0 chat.postMessage 'x': 7 buttons in one row (4 at most, the rest in an overflow menu)"
    ]
    keeps = [b for b in every if str(b["action_id"]).startswith("costguard.keep_")][:2]
    [found] = problems(said(section("idle"), actions("a", keeps)))
    assert "but no Stop now" in found
    stop = [b for b in every if b["action_id"] == "costguard.stop_now"]
    found_all = problems(said(section("costguard will not stop it: no GPU use."), actions("a", [*keeps, *stop])))
    assert ["where it says costguard 'will not stop it'" in p for p in found_all] == [True]


def test_costguard_s_own_warnings_laid_out_keep_the_rule_alone_and_among_others() -> None:
    buttons = warning_buttons("i-0123456789abcdef0", "us-east-1", True, start_at="2026-11-22T05:00:00Z", for_runs=True)
    why = why_button("i-0123456789abcdef0", "us-east-1", decided="2026-11-21T14:00:00+00:00")
    part = Part(
        "i-0123456789abcdef0", "cg-warn-1", "GPU machine", 136.0, "idle", "idle", "Stops.", buttons=(*buttons, why)
    )
    alone = Live((part,)).message()
    among = Live((part, Part(**{**part.__dict__, "key": "i-0123456789abcdef1", "marker": "cg-warn-2"}))).message()
    assert problems([("chat.postMessage", {"text": "x", "blocks": m.slack_blocks()}) for m in (alone, among)]) == []
    [row] = [b for b in alone.blocks if b["type"] == "actions"]
    assert sorted(a for e in row["elements"] for a in offered(e)) == sorted(b["action_id"] for b in (*buttons, why))
    assert laid_out(buttons)[-1]["type"] == "overflow"  # what a row cannot hold is one "…" away, not gone


@pytest.fixture(scope="module")
def demo_said(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, dict[str, Any]]]:
    """`python -m demo` in a folder of its own, as `make demo` runs it: every message and edit it sent Slack."""
    where = tmp_path_factory.mktemp("demo")
    paths = [str(ROOT), str(ROOT / "layers" / "costguard"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    done = subprocess.run(
        [sys.executable, "-m", "demo"], cwd=where, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    sent = json.loads((where / "demo-output" / "said.json").read_text())
    return [(str(m.pop("how")), m) for m in sent]


def test_every_message_the_demo_posts_or_edits_offers_only_buttons_that_act_and_the_fewest(
    demo_said: list[tuple[str, dict[str, Any]]],
) -> None:
    with_buttons = [p for _, p in demo_said if any(b.get("type") == "actions" or "accessory" in b for b in p["blocks"])]
    assert len(with_buttons) >= 15  # the story's warnings, stops and their edits: the rule is read on all of them
    found = problems(demo_said)
    assert not found, "\n".join(found)
