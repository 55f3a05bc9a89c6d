"""An organization of three accounts, wired as make org-deploy wires them (OrganizationId, the hub's account and
stack name; no ARN of a member anywhere): the hub, a member, and a member created after the hub was deployed.
Clicks reach each member's click queue by the name derived from the hub's stack, each member hands its week to
the hub's figures queue by the name the hub's stack gives it, and the hub's organization digest shows the new
account with no change to the hub.

moto evaluates no queue or IAM policy across accounts (tests/template/test_organization_trust.py evaluates the
organization's conditions): each member's queue is reached with that member's credentials, one region each.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from costguard.aws.clients import ClientFactory
from costguard.core import tags
from costguard.digest.organization.units import accounts_in_units, expected_with_units
from costguard.runtime import Runtime
from scripts.org_deploy import Caller, OrgDeployment, figures_queue_arn, member_parameters
from testing.handlers import LambdaContext, load_handler
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import MEMBER, MEMBER_REGION, REGION, MemberContext, make_runtime, member_with_machine
from tests.integration.test_buttons import SIGNING_SECRET, click_payload, http_event
from tests.integration.test_organization_digest import publish_idle_hours

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")

HUB, LATE, LATE_REGION, ORG, STACK = "123456789012", "555566667777", "eu-central-1", "o-a1b2c3d4e5", "costguard"
receiver = load_handler("slack_receiver")
worker = load_handler("buttons")
digest = load_handler("weekly_digest")
organization = load_handler("organization_digest")


class LateContext(LambdaContext):
    invoked_function_arn = f"arn:aws:lambda:{LATE_REGION}:{LATE}:function:costguard-buttons"


def session_in(account: str, region: str) -> boto3.session.Session:
    creds = boto3.client("sts", region_name=REGION).assume_role(
        RoleArn=f"arn:aws:iam::{account}:role/AWSCloudFormationStackSetExecutionRole", RoleSessionName="stackset"
    )["Credentials"]
    return boto3.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
        region_name=region,
    )


def member_runtime(hub: Runtime, session: boto3.session.Session, region: str, now: datetime) -> Runtime:
    settings = dataclasses.replace(hub.settings, governed_regions=(region,), home_region=region)
    runtime = Runtime(settings, ClientFactory(session, default_region=region), slack_pace=0.0)
    runtime.now = lambda: now  # type: ignore[method-assign]
    return runtime


@pytest.fixture
def world(
    aws: None, slack: SlackStandIn, member: boto3.session.Session, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    hub = make_runtime(slack)
    hub.now = lambda: now  # type: ignore[method-assign]
    secret = json.dumps({"bot_token": slack.token, "signing_secret": SIGNING_SECRET})
    boto3.client("secretsmanager", region_name=REGION).put_secret_value(SecretId="costguard/slack", SecretString=secret)
    hub_sqs = boto3.client("sqs", region_name=REGION)
    hub_clicks = hub_sqs.create_queue(QueueName="costguard-ClickQueue-1")["QueueUrl"]
    # What make org-deploy tells every member, computed as it computes it: no member's ARN in it.
    deployment = OrgDeployment(STACK, "costguard-members", REGION, (MEMBER_REGION, LATE_REGION), ("ou-1",), "b", "r")
    told = member_parameters(deployment, Caller(HUB, ORG, HUB))
    figures = hub_sqs.create_queue(QueueName=f"{STACK}-figures")["QueueUrl"]  # the hub's, named by its stack
    late = session_in(LATE, LATE_REGION)  # an account created, and moved into the unit, after the hub's deploy
    members = {}
    for account, session, region in [(MEMBER, member, MEMBER_REGION), (LATE, late, LATE_REGION)]:
        queue = session.client("sqs").create_queue(QueueName=f"{told['HubStackName']}-clicks")["QueueUrl"]
        machine = member_with_machine(session, slack, "g5.12xlarge")
        publish_idle_hours(session, machine, now, 6)
        runtime = member_runtime(hub, session, region, now)
        runtime.clients._clients[("sqs", REGION)] = hub_sqs  # what the hub's figures queue policy lets it do
        hub.clients._clients[("sqs", region)] = session.client("sqs")  # what the member's click queue lets the hub
        members[account] = {"runtime": runtime, "queue": queue, "machine": machine, "session": session}
    # The hub's receiver and digest, as the template sets them with OrganizationId and no member ARN.
    monkeypatch.setenv("CLICK_QUEUE_URL", hub_clicks)
    monkeypatch.setenv("MEMBER_CLICK_QUEUES", "")
    monkeypatch.setenv("MEMBER_CLICK_QUEUE_NAME", f"{STACK}-clicks")
    monkeypatch.setenv("FIGURES_QUEUE_URL", figures)
    monkeypatch.setenv("MEMBER_DIGEST_ROLES", "")
    monkeypatch.setenv("ORGANIZATION_ID", ORG)
    monkeypatch.setenv("HANDOFF_QUEUE_ARN", told["HubFiguresQueueArn"])
    monkeypatch.setenv("OWNER_DIGESTS", "false")
    monkeypatch.setenv("TEAM_TIMEZONE", "UTC")
    for handler in (receiver, worker, digest, organization):
        handler._settings.cache_clear()
    yield {"hub": hub, "hub_clicks": hub_clicks, "members": members, "told": told, "figures": figures, "now": now}
    for handler in (receiver, worker, digest, organization):
        handler._settings.cache_clear()


def press(world: dict[str, Any], slack: SlackStandIn, account: str, region: str) -> dict[str, Any]:
    machine = world["members"][account]["machine"]
    payload = click_payload(slack, machine)
    payload["actions"][0]["value"] = json.dumps({"i": machine, "r": region, "a": account})
    return receiver.lambda_handler(http_event(payload, at=world["now"]), LambdaContext(), runtime=world["hub"])  # type: ignore[no-any-return]


def queued(session: Any, url: str) -> list[dict[str, str]]:
    found = session.client("sqs").receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [{"body": m["Body"]} for m in found]


def test_members_are_told_no_arn_but_the_hubs_figures_queue_by_its_stacks_name(world: dict[str, Any]) -> None:
    told = world["told"]
    assert told["HubFiguresQueueArn"] == f"arn:aws:sqs:{REGION}:{HUB}:{STACK}-figures"
    assert {told["OrganizationId"], told["HubAccountId"], told["HubStackName"]} == {ORG, HUB, STACK}
    assert "HubReceiverRoleArn" not in told
    assert figures_queue_arn(
        OrgDeployment(STACK, "s", REGION, (REGION,), ("ou-1",), "b", "r"), Caller(HUB, ORG, HUB)
    ).endswith(f":{world['figures'].rsplit('/', 1)[1]}")


@pytest.mark.parametrize(
    ("account", "region", "context"), [(MEMBER, MEMBER_REGION, MemberContext), (LATE, LATE_REGION, LateContext)]
)
def test_a_click_reaches_the_member_account_by_the_derived_queue_name_and_is_acted_on_there(
    world: dict[str, Any], slack: SlackStandIn, account: str, region: str, context: type[LambdaContext]
) -> None:
    assert press(world, slack, account, region)["statusCode"] == 200
    assert queued(boto3.Session(region_name=REGION), world["hub_clicks"]) == []
    member = world["members"][account]
    records = queued(member["session"], member["queue"])
    assert len(records) == 1
    done = worker.lambda_handler({"Records": records}, context(), runtime=member["runtime"])
    assert done["clicks"][0]["status"] == "done"
    found = (
        member["session"]
        .client("ec2")
        .describe_tags(Filters=[{"Name": "resource-id", "Values": [member["machine"]]}])["Tags"]
    )
    assert tags.KEEP_UNTIL in {t["Key"] for t in found}


def test_the_organization_digest_shows_an_account_created_after_the_hub_with_no_change_to_the_hub(
    world: dict[str, Any], slack: SlackStandIn
) -> None:
    for account, context in ((MEMBER, MemberContext), (LATE, LateContext)):
        week = digest.lambda_handler({"costguard": "digest"}, context(), runtime=world["members"][account]["runtime"])
        assert week["handed_over"], account
    result = organization.lambda_handler({"costguard": "organization-digest"}, LambdaContext(), runtime=world["hub"])
    assert result["status"] == "posted"
    assert sorted(result["accounts"]) == sorted([MEMBER, LATE])
    assert result["refused"] == 0
    text = json.dumps(slack.messages[-1].blocks)
    assert LATE in text
    assert MEMBER in text


def test_without_organization_id_the_hub_still_refuses_a_week_from_an_account_it_was_not_told_of(
    world: dict[str, Any], slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORGANIZATION_ID", "")
    monkeypatch.setenv("MEMBER_DIGEST_ROLES", f"arn:aws:iam::{MEMBER}:role/costguard-WeeklyDigestFunctionRole-1")
    organization._settings.cache_clear()
    for account, context in ((MEMBER, MemberContext), (LATE, LateContext)):
        digest.lambda_handler({"costguard": "digest"}, context(), runtime=world["members"][account]["runtime"])
    result = organization.lambda_handler({"costguard": "organization-digest"}, LambdaContext(), runtime=world["hub"])
    assert MEMBER in result["accounts"]
    assert LATE not in result["accounts"]
    assert result["refused"] == 1


def units_of_the_organization() -> dict[str, Any]:
    """A moto organization managed from the hub's account: a unit with a child unit, an account in each, and an
    account in another unit."""
    orgs = boto3.client("organizations", region_name=REGION)
    orgs.create_organization(FeatureSet="ALL")
    root = orgs.list_roots()["Roots"][0]["Id"]

    def unit(parent: str, name: str) -> str:
        return orgs.create_organizational_unit(ParentId=parent, Name=name)["OrganizationalUnit"]["Id"]  # type: ignore[no-any-return]

    def account(name: str, parent: str) -> str:
        made = orgs.create_account(Email=f"{name}@example.com", AccountName=name)["CreateAccountStatus"]["AccountId"]
        orgs.move_account(AccountId=made, SourceParentId=root, DestinationParentId=parent)
        return made  # type: ignore[no-any-return]

    ml = unit(root, "ml")
    research = unit(ml, "research")
    other = unit(root, "finance")
    return {
        "ml": ml,
        "sandbox": account("sandbox", ml),
        "research": account("research", research),
        "finance": account("finance", other),
    }


def test_the_accounts_of_the_chosen_units_and_their_child_units_are_expected(aws: None) -> None:
    org = units_of_the_organization()
    organizations = boto3.client("organizations", region_name=REGION)
    assert accounts_in_units(organizations, [org["ml"]]) == [org["sandbox"], org["research"]]
    assert expected_with_units([HUB, org["sandbox"]], organizations, [org["ml"]]) == [
        HUB,
        org["sandbox"],
        org["research"],
    ]


def test_organizations_unreadable_leaves_the_digest_with_the_accounts_it_knows() -> None:
    client = boto3.client("organizations", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    stub.add_client_error("list_accounts_for_parent", "AccessDeniedException", expected_params={"ParentId": "ou-1"})
    with stub:
        assert expected_with_units([HUB], client, ["ou-1"]) == [HUB]


def test_the_organization_digest_names_an_account_of_the_units_that_has_not_reported(
    world: dict[str, Any], slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = units_of_the_organization()
    monkeypatch.setenv("ORGANIZATION_UNITS", org["ml"])
    organization._settings.cache_clear()
    digest.lambda_handler({"costguard": "digest"}, MemberContext(), runtime=world["members"][MEMBER]["runtime"])
    result = organization.lambda_handler({"costguard": "organization-digest"}, LambdaContext(), runtime=world["hub"])
    assert result["accounts"] == [MEMBER]
    assert sorted(result["missing"]) == sorted([HUB, org["sandbox"], org["research"]])
    text = json.dumps(slack.messages[-1].blocks)
    assert f"`{org['sandbox']}`: never reported" in text
    assert org["finance"] not in text
