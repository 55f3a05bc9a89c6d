"""The weekly digest says what it said before its performance work: the same figures and advice in the
channel post, in every owner's direct message, in the week kept and handed to the hub, and the same
dashboards, over the same 400-machine account (testing/worlds/digest.py).

tests/fixtures/digest_golden.json was captured from the commit before that work by
`python -m bench.digest_golden --commit 4f0b96e`, and again by `--commit aa1b387` when the digest began
judging hours by the stopper's rule, busiest core included (issue 31: fewer idle hours, less waste), and by
`--commit 452a20b` when it priced idle hours on the bill (issue 32: Spot machines' waste at the Spot price,
the price basis said in the post and each owner's message, "on the bill" where it said "of on-demand time"),
and by `--commit 1099a77` when a Savings Plan's room was judged on what runs now (the basis line's words
alone changed), and by `--commit HEAD` when the channel's post became a headline with a thread, and the
hub (not the account) began telling each owner, once across accounts, only with something to act on (issue
34: the post's figures moved to the thread's replies; the owners' messages are the hub's, by email), and
when the working hours a schedule suggestion rests on became Slack dates, each reader's own time (issue 34:
"within 02:00-18:00 UTC" now two Slack dates; nothing else changed), and when the digest's times came from the
one Slack date writer (a day's fallback names UTC, a day and time reads "Nov 23, 2026 at 9:00 AM"), and by
`--commit 2de6880` when the channel's thread was cut to be read to the end (issue 46, item 7: 8 owners' lines,
each figure once, a line of advice each; the owners' messages, the week kept and handed over, the dashboards and
the answer unchanged), and by `--commit 16a06e7` when the hygiene line of the machines the activity check cannot
reach said why and the fix (issue 44, item 1: that one line's words; nothing else changed), and by `--commit
c9bca62` when the thread lost more words (issue 46, item 7: 6 owners' lines, 2 suggestions, the price basis's
words; no figure changed), and by `--commit 2bd5ac1` when the hygiene section said what the machines the check
cannot reach idled (issue 44: one line added to that block; nothing else changed). Sections added to a message
since are allowed (each block the old code posted must still be there, the same, in the same order); a change to
what an old block says is not. A deliberate change of wording is captured again with `--commit HEAD`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from testing.runs.golden import FIXTURE, capture
from testing.runs.handler import ROOT

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return dict(json.loads(FIXTURE.read_text()))


@pytest.fixture(scope="module")
def now_said(golden: dict[str, Any]) -> dict[str, Any]:
    return capture(ROOT, golden["instances"])


def in_order(old: Sequence[Any], new: Sequence[Any]) -> list[Any]:
    """The old blocks that are not in `new`, in their order (new blocks may come between them)."""
    rest = iter(new)
    return [block for block in old if not any(block == candidate for candidate in rest)]


def test_the_channel_post_and_its_thread_say_the_same_figures_and_advice(
    golden: dict[str, Any], now_said: dict[str, Any]
) -> None:
    old, new = golden["channel"], now_said["channel"]
    assert [m["text"] for m in new] == [m["text"] for m in old]  # the post, then each reply in its thread
    for before, now in zip(old, new, strict=True):
        assert in_order(before["blocks"], now["blocks"]) == [], now["text"]
    assert len(new[0]["blocks"]) <= 12  # the post: a headline read to the end


def test_every_owner_is_told_the_same_week_and_no_one_else_is_told(
    golden: dict[str, Any], now_said: dict[str, Any]
) -> None:
    assert sorted(now_said["owners"]) == sorted(golden["owners"])
    for channel, old in golden["owners"].items():
        new = now_said["owners"][channel]
        assert new["text"] == old["text"], channel
        assert in_order(old["blocks"], new["blocks"]) == [], channel


def test_the_week_kept_and_handed_over_and_the_dashboards_are_the_same(
    golden: dict[str, Any], now_said: dict[str, Any]
) -> None:
    for key, value in golden["week_record"].items():
        assert now_said["week_record"][key] == value, key
    assert now_said["handed_over"] == [now_said["week_record"]]
    assert now_said["owners_handed"] == golden["owners_handed"] == now_said["answer"]["owners_handed"]
    assert now_said["dashboards"] == golden["dashboards"]
    for key, value in golden["answer"].items():
        assert now_said["answer"][key] == value, key
