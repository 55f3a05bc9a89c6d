"""The commitments world (testing/worlds/commitments.py) through costguard's real sweep, for a day, judged on
the true bill (testing/bill.py): the fast check of what bench/commitments.py measures over whole weeks."""

from __future__ import annotations

from testing import week


def test_a_day_of_the_commitments_world_runs_through_costguard_without_interrupting_work() -> None:
    figures = week.costguard_week(week.ROOT, seed=7, no_ssm_share=0.0, days=1, commitments=True)
    money = figures["money"]
    assert figures["network_attempts"] == [], "every AWS call of the week is answered in process"
    assert figures["slack_refused"] == [], "every message of the week is one Slack accepts"
    assert figures["interruptions"] == 0, figures["interruptions_by_cause"]
    assert 0 < money["saved_usd"] < money["bill_nobody_stops"]
    assert money["claimed_usd"] > 0
