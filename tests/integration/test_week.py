"""The simulated week (testing/week.py, which bench/week.py measures) as a check: through the real
sweep, no real work is interrupted and most idle GPU-hours are reclaimed, whatever the seed's week holds."""

from __future__ import annotations

import pytest

from costguard.idle.rules.trail import Rule
from testing import week


@pytest.mark.slow
def test_a_simulated_week_interrupts_no_real_work_and_reclaims_most_idle_gpu_hours() -> None:
    figures = week.costguard_week(week.ROOT, seed=11, no_ssm_share=0.0)
    assert figures["interruptions"] == 0, figures["interruptions_by_cause"]
    assert figures["work_gpu_hours_lost"] == 0
    assert figures["warnings_about_busy_machines"] == 0
    assert figures["reclaimed_percent"] >= 85
    assert figures["network_attempts"] == [], "every AWS call of the week is answered in process"
    assert figures["slack_refused"] == [], "every message of the week is one Slack accepts"
    assert figures["decisions"] > 0
    assert figures["decisions_without_trail"] == 0, "every decision in the ledger says why"
    assert set(figures["trail_steps_by_rule"]) <= {r.value for r in Rule}
    assert figures["trail_steps_by_rule"]["idle verdict"] >= figures["decisions"]
