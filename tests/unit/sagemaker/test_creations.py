"""The CloudTrail records of SageMaker's create calls, as AWS writes them, and who owns a Studio app."""

from __future__ import annotations

import pytest

from costguard.core.errors import EventValidationError
from costguard.core.ownership import OwnerSource, decide_owner
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
    assert role_says.owner == "SageMaker", "a session name, which names no person"
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
