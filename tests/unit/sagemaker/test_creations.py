"""The CloudTrail records of SageMaker's create calls, as AWS writes them, and who owns a Studio app."""

from __future__ import annotations

import pytest

from costguard.core.errors import EventValidationError
from costguard.core.ownership import OwnerSource, decide_owner, owner_needs_correction
from costguard.core.records import Skipped
from costguard.core.sagemaker import Kind
from costguard.sagemaker.rules.creations import Creation, app_owner, parse_record
from tests.unit.sagemaker.resources import (
    record,
)


def test_create_endpoint_as_aws_documents_it_names_the_endpoint_and_its_iam_user() -> None:
    created = parse_record(record("sagemaker-createendpoint.json"))
    assert isinstance(created, Creation)
    assert (created.kind, created.name, created.region) == (Kind.ENDPOINT, "ExampleEndpoint", "us-east-1")
    assert created.arn == "arn:aws:sagemaker:us-east-1:123456789012:endpoint/exampleendpoint"
    owner = decide_owner(created.identity, existing_tags={}, owner_tag_key="Owner")
    assert (owner.owner, owner.source) == ("intern", OwnerSource.IAM_USER)


def test_create_notebook_instance_by_an_identity_center_user_is_theirs() -> None:
    created = parse_record(record("sagemaker-createnotebookinstance.json"))
    assert isinstance(created, Creation)
    assert created.key == "notebook/alice-research"
    owner = decide_owner(created.identity, existing_tags={}, owner_tag_key="Owner")
    assert (owner.owner, owner.source) == ("alice@example.com", OwnerSource.IDENTITY_CENTER)


def test_create_app_by_studios_execution_role_names_the_app_and_the_propagated_profile() -> None:
    created = parse_record(record("sagemaker-createapp.json"))
    assert isinstance(created, Creation)
    assert created.name == "d-abc123def456/user.bob/JupyterLab/default"
    assert created.identity.source_identity == "bob"
    role_says = decide_owner(created.identity, existing_tags={}, owner_tag_key="Owner")
    assert role_says.owner == "AmazonSageMaker-ExecutionRole", "SageMaker's own session name names no person"
    by_profile = app_owner(role_says, {"Owner": "bob@example.com"}, "Owner", "user bob")
    assert (by_profile.owner, by_profile.source) == ("bob@example.com", OwnerSource.GROUP_TAG)
    nobody = app_owner(role_says, {}, "Owner", "user bob")
    assert nobody.owner is None
    assert nobody.source is OwnerSource.UNKNOWN


def test_failed_or_ungoverned_create_calls_are_skipped_and_hostile_names_refused() -> None:
    failed = {**record("sagemaker-createendpoint.json"), "errorCode": "ValidationException"}
    assert isinstance(parse_record(failed), Skipped)
    canvas = record("sagemaker-createapp.json")
    canvas["requestParameters"] = {**canvas["requestParameters"], "appType": "Canvas"}
    assert isinstance(parse_record(canvas), Skipped)
    hostile = record("sagemaker-createnotebookinstance.json")
    hostile["requestParameters"] = {**hostile["requestParameters"], "notebookInstanceName": "<!channel>"}
    with pytest.raises(EventValidationError):
        parse_record(hostile)


def notebook_code(record_name: str) -> dict[str, object]:
    """A create call made from code in a SageMaker notebook (instance or Studio): SageMaker assumed the notebook's
    execution role under the session name `SageMaker`, and no person is named anywhere in the record."""
    made = record(record_name)
    made["userIdentity"] = {
        "type": "AssumedRole",
        "principalId": "AROAEXECUTIONROLE0042:SageMaker",
        "arn": "arn:aws:sts::123456789012:assumed-role/AmazonSageMaker-ExecutionRole-20250312T101500/SageMaker",
        "accountId": "123456789012",
        "accessKeyId": "ASIAEXECUTIONROLE042",
        "sessionContext": {
            "sessionIssuer": {
                "type": "Role",
                "principalId": "AROAEXECUTIONROLE0042",
                "arn": "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-20250312T101500",
                "accountId": "123456789012",
                "userName": "AmazonSageMaker-ExecutionRole-20250312T101500",
            },
            "attributes": {"creationDate": "2026-11-20T13:02:11Z", "mfaAuthenticated": "false"},
        },
    }
    return made


@pytest.mark.parametrize("record_name", ["sagemaker-createendpoint.json", "sagemaker-createnotebookinstance.json"])
def test_a_resource_created_from_code_in_a_notebook_is_owned_by_the_execution_role_never_sagemaker(
    record_name: str,
) -> None:
    created = parse_record(notebook_code(record_name))
    assert isinstance(created, Creation)
    decision = decide_owner(created.identity, existing_tags={}, owner_tag_key="Owner")
    assert decision.owner == "AmazonSageMaker-ExecutionRole-20250312T101500"
    assert decision.source is OwnerSource.EXECUTION_ROLE
    written = decision.tags_to_write("Owner", {})
    assert written["Owner"] != "SageMaker"
    assert written["costguard:owner-source"] == "execution-role"
    assert written["costguard:created-by"].endswith("/SageMaker"), "the launch itself is still recorded as it was"


def test_an_owner_sagemaker_costguard_wrote_is_corrected_to_the_role_and_a_persons_own_is_kept() -> None:
    written = {
        "Owner": "SageMaker",
        "costguard:owner-source": OwnerSource.ASSUMED_ROLE.value,
        "costguard:created-by": "arn:aws:sts::123456789012:assumed-role/nlp-notebooks/SageMaker",
    }
    assert owner_needs_correction(written, "Owner")
    decision = decide_owner(None, existing_tags=written, owner_tag_key="Owner")
    assert decision.tags_to_write("Owner", written) == {
        "Owner": "nlp-notebooks",
        "costguard:owner-source": OwnerSource.EXECUTION_ROLE.value,
    }
    by_hand = {"Owner": "SageMaker"}
    assert not owner_needs_correction(by_hand, "Owner")
    assert decide_owner(None, existing_tags=by_hand, owner_tag_key="Owner").tags_to_write("Owner", by_hand) == {
        "costguard:owner-source": OwnerSource.LAUNCH_TAG.value
    }
