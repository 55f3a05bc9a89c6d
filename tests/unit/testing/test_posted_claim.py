"""The bench reads the saving costguard claims from the weekly digest it posted, in the digest's own words: a
change of words that the bench cannot read must fail here, not leave the bench's claim empty."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from testing.week import posted_claim

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "digest_golden.json"


def test_the_claim_is_read_from_the_digest_the_handler_posted() -> None:
    posted = [SimpleNamespace(**m) for m in json.loads(GOLDEN.read_text())["channel"]]
    assert posted_claim(posted) == 9543.0


def test_a_digest_of_an_older_tree_is_read_too_and_one_with_no_stop_claims_nothing() -> None:
    old = SimpleNamespace(text="", blocks=[{"text": "Stopped machines stayed off 4,820 h: *$42,167 saved*"}])
    assert posted_claim([old]) == 42167.0
    none = SimpleNamespace(text="", blocks=[{"text": "costguard stopped no machine this week."}])
    assert posted_claim([none]) == 0.0
