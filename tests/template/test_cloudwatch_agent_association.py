"""The optional State Manager association that installs and configures the CloudWatch agent: off unless asked, the
configuration it ships the one in docs/cloudwatch-agent.json, installed before it is configured, on the tagged
machines only, and nothing granted to the stack for it."""

from __future__ import annotations

import json
import re
from typing import Any

from testing.handlers import ROOT

AGENT = ("CloudWatchAgentConfig", "CloudWatchAgentDocument", "CloudWatchAgentAssociation")


def test_the_configuration_it_ships_is_docs_cloudwatch_agent_json(sam_template: dict[str, Any]) -> None:
    parameter = sam_template["Resources"]["CloudWatchAgentConfig"]["Properties"]
    assert json.loads(parameter["Value"]) == json.loads((ROOT / "docs" / "cloudwatch-agent.json").read_text())
    assert len(parameter["Value"].encode()) <= 4096, "a standard SSM parameter holds 4 KB"
    # CloudWatchAgentServerPolicy, on the machines' role, lets them read only parameters named so.
    assert parameter["Name"] == {"Fn::Sub": "AmazonCloudWatch-${AWS::StackName}"}


def test_it_is_off_unless_asked_and_every_part_of_it_goes_with_its_switch(sam_template: dict[str, Any]) -> None:
    switch = sam_template["Parameters"]["CloudWatchAgent"]
    assert (switch["Default"], switch["AllowedValues"]) == ("false", ["true", "false"])
    assert sam_template["Conditions"]["CloudWatchAgentOn"] == {"Fn::Equals": [{"Ref": "CloudWatchAgent"}, "true"]}
    for name in AGENT:
        assert sam_template["Resources"][name]["Condition"] == "CloudWatchAgentOn", name
    for name, output in sam_template["Outputs"].items():
        if "CloudWatchAgent" in json.dumps(output.get("Value")):
            assert output["Condition"] == "CloudWatchAgentOn", name


def test_the_document_installs_the_agent_then_configures_it_from_the_stacks_parameter(
    sam_template: dict[str, Any],
) -> None:
    content = sam_template["Resources"]["CloudWatchAgentDocument"]["Properties"]["Content"]
    install, configure = content["mainSteps"]
    assert (install["action"], install["inputs"]["documentPath"]) == ("aws:runDocument", "AWS-ConfigureAWSPackage")
    assert install["inputs"]["documentParameters"] == {"action": "Install", "name": "AmazonCloudWatchAgent"}
    assert (configure["action"], configure["inputs"]["documentPath"]) == (
        "aws:runDocument",
        "AmazonCloudWatch-ManageAgent",
    )
    assert configure["inputs"]["documentParameters"] == {
        "action": "configure",
        "mode": "ec2",
        "optionalConfigurationSource": "ssm",
        "optionalConfigurationLocation": {"Ref": "CloudWatchAgentConfig"},
        "optionalRestart": "yes",
    }
    assert "NVIDIA driver" in content["description"]


def test_the_association_targets_the_machines_with_the_parameters_tag(sam_template: dict[str, Any]) -> None:
    association = sam_template["Resources"]["CloudWatchAgentAssociation"]["Properties"]
    assert association["Name"] == {"Ref": "CloudWatchAgentDocument"}
    [target] = association["Targets"]
    split = {"Fn::Split": ["=", {"Ref": "CloudWatchAgentTag"}]}
    assert target["Key"] == {"Fn::Sub": ["tag:${TagKey}", {"TagKey": {"Fn::Select": [0, split]}}]}
    assert target["Values"] == [{"Fn::Select": [1, split]}]
    tag = sam_template["Parameters"]["CloudWatchAgentTag"]
    assert re.fullmatch(tag["AllowedPattern"], tag["Default"])
    assert not re.fullmatch(tag["AllowedPattern"], "NoValue"), "Key=Value: a tag key alone would target nothing"
    assert "ScheduleExpression" in association, "re-applied: an agent removed or stopped comes back"


def test_the_stack_grants_nothing_for_it(cfn: dict[str, Any]) -> None:
    # State Manager runs a Command document through each machine's own SSM agent and instance role.
    association = cfn["Resources"]["CloudWatchAgentAssociation"]["Properties"]
    assert "AutomationTargetParameterName" not in association
    roles = [json.dumps(r) for r in cfn["Resources"].values() if r["Type"] == "AWS::IAM::Role"]
    assert not any(name in role for role in roles for name in AGENT)
