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


def test_an_instance_launched_from_a_sagemaker_notebook_is_owned_by_its_execution_role() -> None:
    role = Identity(
        type="AssumedRole",
        arn="arn:aws:sts::1:assumed-role/ml-notebooks/SageMaker",
        session_issuer_arn="arn:aws:iam::1:role/service-role/ml-notebooks",
        session_issuer_name="ml-notebooks",
    )
    decision = decide_owner(role, existing_tags={}, owner_tag_key=KEY)
    assert (decision.owner, decision.source) == ("ml-notebooks", OwnerSource.EXECUTION_ROLE)
    # With no role to name (an ARN cut short), nobody: never "SageMaker".
    cut = Identity(type="AssumedRole", arn="arn:aws:sts::1:assumed-role//SageMaker")
    nameless = decide_owner(cut, existing_tags={}, owner_tag_key=KEY)
    assert (nameless.owner, nameless.source) == (None, OwnerSource.UNKNOWN)


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


def assumed(role: str, session: str, *, invoked_by: str = "", web_identity: str = "") -> Identity:
    return Identity(
        type="AssumedRole",
        arn=f"arn:aws:sts::123456789012:assumed-role/{role}/{session}",
        session_issuer_arn=f"arn:aws:iam::123456789012:role/{role}",
        session_issuer_name=role,
        invoked_by=invoked_by,
        web_identity_provider=web_identity,
    )


@pytest.mark.parametrize(
    ("identity", "owner"),
    [
        # A CloudFormation service role: CloudFormation names the session itself.
        (
            assumed("ml-stack-deployer", "AWSCloudFormation", invoked_by="cloudformation.amazonaws.com"),
            "ml-stack-deployer",
        ),
        # The CDK's execution role.
        (
            assumed("cdk-hnb659fds-cfn-exec-role-123456789012-us-east-1", "AWSCloudFormation"),
            "cdk-hnb659fds-cfn-exec-role-123456789012-us-east-1",
        ),
        # A CI role assumed through OIDC: the session name is whatever the workflow set.
        (assumed("gha-train", "GitHubActions"), "gha-train"),
        (assumed("ci-deploy", "run-4711", web_identity="token.actions.githubusercontent.com"), "ci-deploy"),
        (assumed("tf-apply", "terraform-run-9f2c"), "tf-apply"),
    ],
)
def test_automation_sessions_are_owned_by_their_role(identity: Identity, owner: str) -> None:
    decision = decide_owner(identity, existing_tags={}, owner_tag_key="Owner")
    assert decision.owner == owner
    assert decision.source is OwnerSource.AUTOMATION_ROLE


def test_a_person_deploying_through_cloudformation_is_still_the_owner() -> None:
    identity = assumed("admin", "alice@example.com", invoked_by="cloudformation.amazonaws.com")
    assert decide_owner(identity, existing_tags={}, owner_tag_key="Owner").owner == "alice@example.com"


def test_a_legacy_auto_scaling_launch_as_root_is_owned_by_the_groups_owner() -> None:
    root = Identity(type="Root", arn="arn:aws:iam::123456789012:root", invoked_by="autoscaling.amazonaws.com")
    decision = decide_owner(
        root, existing_tags={}, owner_tag_key="Owner", group_tags={"Owner": "team-vision"}, group_name="vision-asg"
    )
    assert (decision.owner, decision.source) == ("team-vision", OwnerSource.GROUP_TAG)
    alone = decide_owner(root, existing_tags={}, owner_tag_key="Owner")
    assert (alone.owner, alone.source) == (None, OwnerSource.SERVICE)
    person_as_root = Identity(type="Root", arn="arn:aws:iam::123456789012:root")
    assert decide_owner(person_as_root, existing_tags={}, owner_tag_key="Owner").owner == "root"


def test_an_automation_session_costguard_wrote_as_owner_is_corrected_to_its_role() -> None:
    written = {
        "Owner": "AWSCloudFormation",
        tags.OWNER_SOURCE: OwnerSource.ASSUMED_ROLE.value,
        tags.CREATED_BY: "arn:aws:sts::123456789012:assumed-role/ml-stack-deployer/AWSCloudFormation",
    }
    decision = decide_owner(None, existing_tags=written, owner_tag_key="Owner")
    assert decision.owner == "ml-stack-deployer"
    assert decision.tags_to_write("Owner", written) == {
        "Owner": "ml-stack-deployer",
        tags.OWNER_SOURCE: OwnerSource.AUTOMATION_ROLE.value,
    }
    # A person's own tag of the same text is theirs: never touched.
    by_hand = {"Owner": "AWSCloudFormation"}
    assert decide_owner(None, existing_tags=by_hand, owner_tag_key="Owner").tags_to_write("Owner", by_hand) == {
        tags.OWNER_SOURCE: OwnerSource.LAUNCH_TAG.value
    }


def test_an_identity_center_role_is_known_by_its_path_whatever_its_name() -> None:
    identity = Identity(
        type="AssumedRole",
        arn="arn:aws:sts::123456789012:assumed-role/DataScience/nadia@example.com",
        session_issuer_arn="arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/DataScience",
        session_issuer_name="DataScience",
    )
    decision = decide_owner(identity, existing_tags={}, owner_tag_key="Owner")
    assert (decision.owner, decision.source) == ("nadia@example.com", OwnerSource.IDENTITY_CENTER)
