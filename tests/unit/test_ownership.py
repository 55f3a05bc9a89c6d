from __future__ import annotations

import pytest

from costguard.core import tags
from costguard.core.people import owner_email
from costguard.owners.launches import LaunchEvent, parse_eventbridge_event
from costguard.owners.rules import Identity, OwnerSource, decide_owner
from testing.handlers import load_event

KEY = "Owner"


def identity_of(fixture: str) -> Identity:
    launch = parse_eventbridge_event(load_event(f"owner_tagger/{fixture}"))
    assert isinstance(launch, LaunchEvent)
    return launch.identity


@pytest.mark.parametrize(
    ("fixture", "owner", "source"),
    [
        ("runinstances-iam-user.json", "alice", OwnerSource.IAM_USER),
        ("runinstances-assumed-role.json", "bob@example.com", OwnerSource.ASSUMED_ROLE),
        ("runinstances-identity-center.json", "carol@example.com", OwnerSource.IDENTITY_CENTER),
        ("runinstances-root.json", "root", OwnerSource.ROOT),
    ],
)
def test_person_launches_are_owned_by_the_person(fixture: str, owner: str, source: OwnerSource) -> None:
    decision = decide_owner(identity_of(fixture), existing_tags={}, owner_tag_key=KEY)
    assert (decision.owner, decision.source) == (owner, source)
    assert decision.created_by.startswith("arn:aws:")


def test_auto_scaling_launch_takes_owner_from_group_tags() -> None:
    decision = decide_owner(
        identity_of("runinstances-autoscaling.json"),
        existing_tags={"aws:autoscaling:groupName": "inference-g5"},
        owner_tag_key=KEY,
        group_tags={KEY: "team-inference"},
        group_name="inference-g5",
    )
    assert (decision.owner, decision.source) == ("team-inference", OwnerSource.GROUP_TAG)
    assert "inference-g5" in decision.reason


def test_auto_scaling_launch_without_group_owner_is_marked_service_and_owns_nothing() -> None:
    decision = decide_owner(identity_of("runinstances-autoscaling.json"), existing_tags={}, owner_tag_key=KEY)
    assert decision.owner is None
    assert decision.source is OwnerSource.SERVICE
    assert decision.tags_to_write(KEY, {}) == {
        tags.CREATED_BY: "arn:aws:sts::123456789012:assumed-role/AWSServiceRoleForAutoScaling/AutoScaling",
        tags.OWNER_SOURCE: "service",
    }


def test_owner_the_service_propagated_is_kept_and_marked_propagated() -> None:
    decision = decide_owner(
        identity_of("runinstances-autoscaling.json"), existing_tags={KEY: "team-training"}, owner_tag_key=KEY
    )
    assert decision.owner is None
    assert decision.source is OwnerSource.SERVICE_PROPAGATED
    assert KEY not in decision.tags_to_write(KEY, {KEY: "team-training"})


def test_owner_tag_set_at_launch_is_never_overwritten() -> None:
    decision = decide_owner(identity_of("runinstances-iam-user.json"), existing_tags={KEY: "dave"}, owner_tag_key=KEY)
    written = decision.tags_to_write(KEY, {KEY: "dave"})
    assert KEY not in written
    assert written[tags.OWNER_SOURCE] == "launch-tag"


def test_cloudformation_launch_for_a_person_is_owned_by_the_person_not_the_service() -> None:
    # invokedBy is set, but the role is the person's: CloudFormation acted with their session.
    person = Identity(
        type="AssumedRole",
        arn="arn:aws:sts::123456789012:assumed-role/ml-research/erin@example.com",
        session_issuer_arn="arn:aws:iam::123456789012:role/ml-research",
        session_issuer_name="ml-research",
        invoked_by="cloudformation.amazonaws.com",
    )
    decision = decide_owner(person, existing_tags={}, owner_tag_key=KEY)
    assert (decision.owner, decision.source) == ("erin@example.com", OwnerSource.ASSUMED_ROLE)


@pytest.mark.parametrize("session", ["botocore-session-1732012345", "1732012345678"])
def test_generated_session_names_fall_back_to_the_role(session: str) -> None:
    role = Identity(type="AssumedRole", arn=f"arn:aws:sts::1:assumed-role/train-pipeline/{session}")
    decision = decide_owner(role, existing_tags={}, owner_tag_key=KEY)
    assert decision.owner == "train-pipeline"


def test_launch_from_an_instance_profile_is_owned_by_its_role() -> None:
    role = Identity(type="AssumedRole", arn="arn:aws:sts::1:assumed-role/airflow-worker/i-0123456789abcdef0")
    decision = decide_owner(role, existing_tags={}, owner_tag_key=KEY)
    assert (decision.owner, decision.source) == ("airflow-worker", OwnerSource.INSTANCE_ROLE)


def test_no_launch_event_means_unknown_owner() -> None:
    decision = decide_owner(None, existing_tags={}, owner_tag_key=KEY)
    assert decision.owner is None
    assert decision.tags_to_write(KEY, {}) == {tags.OWNER_SOURCE: "unknown"}


def test_long_principal_arn_is_clipped_to_ec2_tag_limit() -> None:
    arn = "arn:aws:sts::1:assumed-role/r/" + "x" * 300
    decision = decide_owner(Identity(type="AssumedRole", arn=arn), existing_tags={}, owner_tag_key=KEY)
    written = decision.tags_to_write(KEY, {})
    assert len(written[tags.CREATED_BY]) == 256
    assert len(written[KEY]) == 256


@pytest.mark.parametrize(
    ("owner", "domain", "email"),
    [
        ("alice", "example.com", "alice@example.com"),
        ("carol@example.com", "other.org", "carol@example.com"),
        ("alice", "", None),
        ("team inference", "example.com", None),
        ("", "example.com", None),
        ("root", "example.com", None),
    ],
)
def test_owner_email(owner: str, domain: str, email: str | None) -> None:
    assert owner_email(owner, domain) == email
