"""The weekly digest of a 25-machine team is read to the end: at most 400 words in all its posts (the channel
post and every reply in its thread), each dollar figure and percentage said once. The team is
testing/worlds/digest.py's, its digest run through the real handler (testing/runs/golden.py's capture)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from testing.runs.golden import capture
from testing.runs.handler import ROOT

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
TEAM = 25


def shown(blocks: Any) -> str:
    """What Slack shows of a message's blocks: their texts, each Slack date as its fallback."""
    texts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "text" and isinstance(value, str):
                    texts.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(blocks)
    text = re.sub(r"<!date\^[^|]*\|([^>]*)>", r"\1", "\n".join(texts))
    return re.sub(r"<[^|>]*\|([^>]*)>", r"\1", text)  # a link shows its label


def words(text: str) -> int:
    """Words as a reader counts them: a bullet or a separator is not one."""
    return sum(1 for token in text.split() if re.search(r"\w", token))


@pytest.fixture(scope="module")
def digest() -> list[str]:
    posts = capture(ROOT, TEAM)["channel"]
    assert len(posts) >= 3  # the post and its thread
    return [shown(m["blocks"]) for m in posts]


def test_a_25_machine_team_s_weekly_digest_is_at_most_400_words_in_all_its_posts(digest: list[str]) -> None:
    counted = [words(post) for post in digest]
    assert sum(counted) <= 400, f"{sum(counted)} words: {counted}"
    assert "Idle cost by owner" in digest[1]  # the thread is counted, not only the post


def test_each_dollar_figure_and_percentage_of_the_digest_is_said_once(digest: list[str]) -> None:
    figures: Counter[str] = Counter()
    for post in digest:
        figures.update(re.findall(r"\$[\d,.]*\d|\d[\d,.]*%", re.sub(r"`[^`]*`", "", post)))
    assert len(figures) > 10  # the digest's figures are read
    assert [f for f, n in figures.items() if n > 1] == []
