"""A keep that ends: an exemption added right after costguard's stop interrupted the machine, offered back the
next weekday morning (the team's clock) as "Keep it for its runs", until its owner answers (once a morning, within
a week), and only where its runs are known. Pure."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.idle.rules.decision import Action, Decision, KeptFor
from costguard.idle.rules.offers import (
    exempt_after_interruption,
    hook_offer,
    keep_offer,
    next_morning,
    still_asking,
    unseen_offer,
)

ZONE = "Europe/Paris"
STOPPED = datetime(2026, 11, 24, 16, 37, tzinfo=UTC)  # a Tuesday, 17:37 in Paris: costguard stopped the box
RESTARTED = datetime(2026, 11, 24, 22, 10, tzinfo=UTC)  # its job found it stopped: its owner started it again
NEXT_MORNING = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)  # Wednesday 09:00 in Paris
RUNS = "runs `nightly.sh` at 22:00 UTC (its crontab)"
COSTGUARDS = {tags.STOPPED_AT: formatting.format_time(STOPPED), tags.STOP_REASON: "idle for 120 min"}


def box(extra: dict[str, str], launched: datetime = RESTARTED) -> Instance:
    return Instance("i-0123456789abcdef0", "us-east-1", "g5.xlarge", "running", launched, tags=COSTGUARDS | extra)


EXEMPT = {tags.EXEMPT: "the nightly job must run; costguard stopped it"}


def test_an_exemption_right_after_costguards_stop_is_offered_back_the_next_morning_with_its_runs() -> None:
    offer = keep_offer(box(EXEMPT), RUNS, NEXT_MORNING, ZONE)
    assert offer is not None
    assert (offer.stopped_at, offer.restarted_at, offer.runs) == (STOPPED, RESTARTED, RUNS)
    assert offer.key == f"keep-offer:i-0123456789abcdef0:{formatting.format_time(STOPPED)}:2026-11-25"


def test_no_offer_the_evening_of_the_restart_nor_in_the_afternoon_but_on_a_later_morning() -> None:
    assert keep_offer(box(EXEMPT), RUNS, RESTARTED + timedelta(minutes=15), ZONE) is None
    assert keep_offer(box(EXEMPT), RUNS, NEXT_MORNING + timedelta(hours=5), ZONE) is None  # 14:00: not a morning
    assert keep_offer(box(EXEMPT), RUNS, NEXT_MORNING + timedelta(days=1), ZONE) is not None  # runs known a day late
    assert keep_offer(box(EXEMPT), RUNS, NEXT_MORNING + timedelta(days=8), ZONE) is None  # asked within a week only


def test_an_offer_left_unanswered_is_asked_again_on_the_next_morning_once_that_morning() -> None:
    first = keep_offer(box(EXEMPT), RUNS, NEXT_MORNING, ZONE)
    again = keep_offer(box(EXEMPT), RUNS, NEXT_MORNING + timedelta(minutes=15), ZONE)  # the same morning's sweeps
    tomorrow = keep_offer(box(EXEMPT), RUNS, NEXT_MORNING + timedelta(days=1), ZONE)
    assert first is not None
    assert again is not None
    assert tomorrow is not None
    assert again.key == first.key  # once a morning
    assert tomorrow.key != first.key  # a morning of its own: asked again while its owner has not answered


def test_an_owners_answer_ends_the_asking_yes_or_no() -> None:
    assert keep_offer(box(EXEMPT | {tags.KEEP_FOR_RUNS: tags.OFF}), RUNS, NEXT_MORNING, ZONE) is None  # "No"
    assert keep_offer(box(EXEMPT | {tags.KEEP_FOR_RUNS: tags.ON}), RUNS, NEXT_MORNING, ZONE) is None  # "Yes"


def test_a_machine_whose_runs_costguard_does_not_know_is_never_offered_a_keep_for_them() -> None:
    assert keep_offer(box(EXEMPT), "", NEXT_MORNING, ZONE) is None


def test_an_exemption_not_answering_costguards_stop_is_not_offered_back() -> None:
    assert exempt_after_interruption(box({})) is None  # not exempt
    assert exempt_after_interruption(box(EXEMPT | {tags.KEEP_FOR_RUNS: tags.ON})) is None  # kept for runs already
    slack = EXEMPT | {tags.STOP_REASON: "stopped from Slack by ana"}  # its owner's own stop interrupted nothing
    assert exempt_after_interruption(box(slack)) is None
    assert exempt_after_interruption(box(EXEMPT, launched=STOPPED - timedelta(hours=1))) is None  # not restarted since
    assert exempt_after_interruption(box(EXEMPT, launched=STOPPED + timedelta(days=3))) is None  # long after: its own
    untagged = Instance("i-0123456789abcdef0", "us-east-1", "g5.xlarge", "running", RESTARTED, tags=EXEMPT)
    assert exempt_after_interruption(untagged) is None  # costguard never stopped it


def test_the_next_morning_is_a_weekdays_on_the_teams_clock() -> None:
    friday_night = datetime(2026, 11, 27, 21, 0, tzinfo=UTC)
    assert next_morning(friday_night, ZONE) == datetime(2026, 11, 30, 8, 0, tzinfo=UTC)  # Monday 09:00 in Paris
    assert next_morning(RESTARTED, "America/New_York") == datetime(2026, 11, 25, 14, 0, tzinfo=UTC)


# ---------------------------------------------------------------------- a keep-alive hook that holds an idle box
TUESDAY_10 = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)  # the team's clock: UTC
HOOKED = Decision(
    "i-0123456789abcdef0",
    Action.NONE,
    "not idle: the owner's keep-alive hook says keep: kept for its 01:00 run",
    activity="the owner's keep-alive hook says keep: kept for its 01:00 run",
    kept_for=KeptFor.ITS_HOOK,
    runs="runs `pipeline.py` at 01:00 UTC (its crontab)",
)


def hooked_box(extra: dict[str, str] | None = None) -> Instance:
    launched = TUESDAY_10 - timedelta(days=3)
    return Instance("i-0123456789abcdef0", "us-east-1", "g5.12xlarge", "running", launched, tags=extra or {})


def test_a_machine_its_hook_alone_keeps_idle_is_offered_a_keep_for_its_runs_in_the_teams_weekday() -> None:
    offer = hook_offer(hooked_box(), HOOKED, HOOKED.runs, TUESDAY_10, "UTC")
    assert offer is not None
    assert offer.hook == "kept for its 01:00 run"  # the hook's own line, without costguard's words before it
    assert offer.key == "hook-offer:i-0123456789abcdef0:2026-11-24"  # once a day
    assert hook_offer(hooked_box(), HOOKED, HOOKED.runs, TUESDAY_10 + timedelta(days=1), "UTC") is not None  # again


def test_the_hooks_offer_is_not_made_at_night_at_the_weekend_or_out_of_the_teams_hours_on_its_clock() -> None:
    assert hook_offer(hooked_box(), HOOKED, HOOKED.runs, TUESDAY_10.replace(hour=20), "UTC") is None
    assert hook_offer(hooked_box(), HOOKED, HOOKED.runs, TUESDAY_10.replace(hour=7), "UTC") is None
    assert hook_offer(hooked_box(), HOOKED, HOOKED.runs, TUESDAY_10 + timedelta(days=4), "UTC") is None  # Saturday
    # 10:00 UTC is 19:00 in Tokyo: out of a Tokyo team's day
    assert hook_offer(hooked_box(), HOOKED, HOOKED.runs, TUESDAY_10, "Asia/Tokyo") is None


def test_the_hooks_offer_is_never_made_without_known_runs_nor_after_an_answer_nor_on_an_exempt_machine() -> None:
    assert hook_offer(hooked_box(), HOOKED, "", TUESDAY_10, "UTC") is None
    for answered in (tags.ON, tags.OFF, tags.IGNORE_HOOK, ""):
        assert hook_offer(hooked_box({tags.KEEP_FOR_RUNS: answered}), HOOKED, HOOKED.runs, TUESDAY_10, "UTC") is None
    assert hook_offer(hooked_box({tags.EXEMPT: ""}), HOOKED, HOOKED.runs, TUESDAY_10, "UTC") is None


def test_the_hooks_offer_is_made_only_where_the_hook_alone_keeps_it() -> None:
    typed = replace(HOOKED, kept_for=None, reason="not idle: someone typed in pts/0 1 min ago")
    assert hook_offer(hooked_box(), typed, HOOKED.runs, TUESDAY_10, "UTC") is None


def test_the_hooks_offer_is_not_made_about_a_machine_costguard_would_not_stop() -> None:
    no_gpu_metrics = replace(HOOKED, will_stop=False)
    assert hook_offer(hooked_box(), no_gpu_metrics, HOOKED.runs, TUESDAY_10, "UTC") is None


def test_an_unanswered_hooks_offer_is_made_within_a_week_of_its_first() -> None:
    assert still_asking(TUESDAY_10, TUESDAY_10)
    assert still_asking(TUESDAY_10, TUESDAY_10 + timedelta(days=6))
    assert not still_asking(TUESDAY_10, TUESDAY_10 + timedelta(days=7))
    assert not still_asking(None, TUESDAY_10)


# ---------------------------------------------------------------------- a machine costguard cannot look inside
UNSEEN = Decision(
    "i-0123456789abcdef0",
    Action.NONE,
    "warned; no GPU telemetry, so it is not stopped automatically",
    blind=True,
    kept_for=KeptFor.GPUS_UNSEEN,
)


def test_a_blind_machine_without_gpu_metrics_is_offered_its_owners_word_once_a_team_weekday() -> None:
    offer = unseen_offer(hooked_box(), UNSEEN, TUESDAY_10, "UTC")
    assert offer is not None
    assert offer.no_gpu_metrics
    assert offer.key == "unseen-offer:i-0123456789abcdef0:2026-11-24"
    nights = replace(UNSEEN, kept_for=None, action=Action.WARN, unwatched=True)  # stopped in the day, held at night
    offer = unseen_offer(hooked_box(), nights, TUESDAY_10, "UTC")
    assert offer is not None
    assert not offer.no_gpu_metrics


def test_the_unseen_offer_is_not_made_about_a_machine_that_answers_nor_one_held_for_anything_else() -> None:
    assert unseen_offer(hooked_box(), replace(UNSEEN, blind=False), TUESDAY_10, "UTC") is None
    assert unseen_offer(hooked_box(), replace(UNSEEN, kept_for=None), TUESDAY_10, "UTC") is None
    assert unseen_offer(hooked_box(), replace(UNSEEN, kept_for=KeptFor.ITS_HOOK), TUESDAY_10, "UTC") is None
    nights = replace(UNSEEN, kept_for=None, action=Action.WARN, unwatched=True)
    assert unseen_offer(hooked_box(), replace(nights, action=Action.STOP), TUESDAY_10, "UTC") is None  # asked later
    prepaid = replace(nights, action=Action.NONE, kept_for=KeptFor.NOTHING_SAVED)  # a yes would stop nothing
    assert unseen_offer(hooked_box(), prepaid, TUESDAY_10, "UTC") is None
    assert unseen_offer(hooked_box(), replace(nights, scarce="EC2 could not start one"), TUESDAY_10, "UTC") is None


def test_the_unseen_offer_ends_with_its_owners_answer_and_is_never_made_about_an_exempt_machine() -> None:
    for answered in (tags.NOTHING_UNSEEN, tags.MAYBE_UNSEEN, ""):
        assert unseen_offer(hooked_box({tags.UNSEEN_WORK: answered}), UNSEEN, TUESDAY_10, "UTC") is None
    assert unseen_offer(hooked_box({tags.EXEMPT: ""}), UNSEEN, TUESDAY_10, "UTC") is None


def test_the_unseen_offer_is_made_in_the_teams_weekday_hours_only() -> None:
    assert unseen_offer(hooked_box(), UNSEEN, TUESDAY_10.replace(hour=20), "UTC") is None
    assert unseen_offer(hooked_box(), UNSEEN, TUESDAY_10 + timedelta(days=4), "UTC") is None  # Saturday
    assert unseen_offer(hooked_box(), UNSEEN, TUESDAY_10, "Asia/Tokyo") is None  # 19:00 there
