"""The people's word on a machine, one rule for EC2 and SageMaker alike (core/keeping.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from costguard.core import tags
from costguard.core.keeping import kept_by_people, kept_for_runs, starts_declined
from costguard.core.sagemaker import Kind, Resource
from costguard.sagemaker.rules.decision import protection as sagemaker_protection

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_a_machine_without_keep_tags_is_not_kept() -> None:
    assert kept_by_people({"Owner": "ada", tags.SCHEDULE: "Mon-Fri 09:00-18:00"}, NOW) is None


def test_an_exempt_machine_is_kept_with_the_reason_its_tag_gives() -> None:
    assert kept_by_people({tags.EXEMPT: "benchmark rig"}, NOW) == "exempt: benchmark rig"


def test_an_exempt_tag_without_a_value_still_keeps_the_machine() -> None:
    assert kept_by_people({tags.EXEMPT: ""}, NOW) == "exempt: no reason given"


def test_exempt_outranks_a_keep_until_that_has_passed() -> None:
    kept = {tags.EXEMPT: "rig", tags.KEEP_UNTIL: "2026-11-19T12:00:00Z"}
    assert kept_by_people(kept, NOW) == "exempt: rig"


def test_a_keep_until_in_the_future_keeps_the_machine_until_then() -> None:
    assert kept_by_people({tags.KEEP_UNTIL: "2026-11-20T18:30:00Z"}, NOW) == "kept until 2026-11-20T18:30:00Z"


def test_a_keep_until_that_has_passed_keeps_nothing() -> None:
    assert kept_by_people({tags.KEEP_UNTIL: "2026-11-20T11:59:00Z"}, NOW) is None


def test_a_keep_until_of_this_very_moment_has_passed() -> None:
    assert kept_by_people({tags.KEEP_UNTIL: "2026-11-20T12:00:00Z"}, NOW) is None


def test_a_keep_until_nobody_can_read_keeps_the_machine_rather_than_lifting_the_keep() -> None:
    assert kept_by_people({tags.KEEP_UNTIL: "friday"}, NOW) == (
        "costguard:keep-until='friday' is not a time I can read, so it is kept"
    )


def test_a_sagemaker_notebook_is_kept_by_the_same_rule_as_an_instance() -> None:
    kept = {tags.KEEP_UNTIL: "2026-11-21T09:00:00Z"}
    notebook = Resource(
        kind=Kind.NOTEBOOK,
        name="nb",
        region="us-east-1",
        arn="arn:aws:sagemaker:us-east-1:123456789012:notebook-instance/nb",
        instance_type="ml.g5.xlarge",
        status="InService",
        since=datetime(2026, 11, 1, tzinfo=UTC),
        tags=kept,
    )
    assert sagemaker_protection(notebook, NOW) == "kept until 2026-11-21T09:00:00Z"


@pytest.mark.parametrize("value", ["on", "On ", "nightly training", "yes", ""])
def test_keep_for_runs_is_any_value_but_off_as_exempt_is_any_value(value: str) -> None:
    assert kept_for_runs({tags.KEEP_FOR_RUNS: value})


@pytest.mark.parametrize("given", [{}, {tags.KEEP_FOR_RUNS: "off"}, {tags.KEEP_FOR_RUNS: " OFF"}, {tags.EXEMPT: "x"}])
def test_keep_for_runs_absent_or_off_is_not_kept_for_runs(given: dict[str, str]) -> None:
    assert not kept_for_runs(given)


def test_keep_for_runs_outranks_the_owners_switch_that_turned_costguards_starts_off() -> None:
    assert starts_declined({tags.LEARNED_START: "off"})
    assert starts_declined({tags.LEARNED_START: " Off", tags.KEEP_FOR_RUNS: "off"})
    assert not starts_declined({tags.LEARNED_START: "off", tags.KEEP_FOR_RUNS: "on"})
    assert not starts_declined({tags.LEARNED_START: "on"})
