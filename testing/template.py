"""Resources the tests and the demo create exactly as template.yaml defines them (one source of truth)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from samtranslator.yaml_helper import yaml_parse

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"


@cache
def template() -> dict[str, Any]:
    return yaml_parse(TEMPLATE.read_text())  # type: ignore[no-any-return]


def activity_check_script(system_services: str | None = None) -> str:
    """The activity check's script as the deployed document runs it: the template's `!Sub` filled with the
    SystemServices parameter (its default unless given)."""
    doc = template()["Resources"]["ActivityCheckDocument"]["Properties"]["Content"]
    [command] = doc["mainSteps"][0]["inputs"]["runCommand"]
    services = template()["Parameters"]["SystemServices"]["Default"] if system_services is None else system_services
    return str(command["Fn::Sub"]).replace("${SystemServices}", services)


def create_state_table(dynamodb: Any, name: str) -> None:
    """Create the StateTable with the template's keys and TTL."""
    props = template()["Resources"]["StateTable"]["Properties"]
    dynamodb.create_table(
        TableName=name,
        BillingMode=props["BillingMode"],
        AttributeDefinitions=props["AttributeDefinitions"],
        KeySchema=props["KeySchema"],
    )
    ttl = props["TimeToLiveSpecification"]
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": ttl["Enabled"]}
    )


def install_costguard(dynamodb: Any, secretsmanager: Any, env: Mapping[str, str], slack_secret: str) -> None:
    """What `sam deploy` and the operator set up: the state table, and the Slack secret by name."""
    create_state_table(dynamodb, env["STATE_TABLE"])
    secretsmanager.create_secret(Name=env["SLACK_SECRET_NAME"], SecretString=slack_secret)
