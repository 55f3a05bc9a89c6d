"""DefaultHostManagement in the template: the custom resource's function may read, set and reset the one service
setting in the governed regions and pass the one role to Systems Manager, nothing more; the role is Systems Manager's
alone, with the managed policy Default Host Management Configuration expects; all of it only with the parameter."""

from __future__ import annotations

from typing import Any

from costguard.aws.ssm import HOST_MANAGEMENT_SETTING
from costguard.setup.host_management import regions_of
from tests.template.test_template import as_list, statements

SETTING_ARN = (
    "arn:${AWS::Partition}:ssm:*:${AWS::AccountId}:servicesetting/ssm/managed-instance/"
    "default-ec2-instance-management-role"
)
PARTS = ("HostManagementRole", "HostManagementFunction", "HostManagementLogGroup", "HostManagement")


def test_the_parameter_is_off_unless_asked_and_every_part_follows_it(sam_template: dict[str, Any]) -> None:
    parameter = sam_template["Parameters"]["DefaultHostManagement"]
    assert parameter["Default"] == "false"  # an account's setting is changed only by someone who asked
    assert parameter["AllowedValues"] == ["true", "false"]
    assert sam_template["Conditions"]["HostManagementOn"] == {"Fn::Equals": [{"Ref": "DefaultHostManagement"}, "true"]}
    for name in PARTS:
        assert sam_template["Resources"][name]["Condition"] == "HostManagementOn", name
    assert sam_template["Outputs"]["DefaultHostManagement"]["Value"] == {"Fn::GetAtt": ["HostManagement", "Said"]}


def test_the_function_may_touch_only_the_one_setting_in_the_governed_regions_and_pass_only_its_role(
    cfn: dict[str, Any],
) -> None:
    granted = [s for role, s in statements(cfn) if role == "HostManagementFunctionRole"]
    ssm = [s for s in granted if any(a.startswith("ssm:") for a in as_list(s["Action"]))]
    passes = [s for s in granted if "iam:PassRole" in as_list(s["Action"])]
    assert [sorted(as_list(s["Action"])) for s in ssm] == [
        ["ssm:GetServiceSetting", "ssm:ResetServiceSetting", "ssm:UpdateServiceSetting"]
    ]
    assert "*" not in str([s["Action"] for s in granted])
    [setting] = ssm
    assert setting["Resource"] == {"Fn::Sub": SETTING_ARN}
    assert SETTING_ARN.endswith(HOST_MANAGEMENT_SETTING)  # the ARN the code calls is the one IAM allows
    regions = setting["Condition"]["StringEquals"]["aws:RequestedRegion"]
    assert regions == {
        "Fn::If": ["HasGovernedRegions", {"Fn::Split": [",", {"Ref": "GovernedRegions"}]}, [{"Ref": "AWS::Region"}]]
    }
    [passing] = passes
    assert as_list(passing["Action"]) == ["iam:PassRole"]
    assert passing["Resource"] == {"Fn::GetAtt": ["HostManagementRole", "Arn"]}
    assert passing["Condition"] == {"StringEquals": {"iam:PassedToService": "ssm.amazonaws.com"}}
    others = [s for s in granted if s not in ssm and s not in passes]
    # SAM's dead-letter send, and the dead-letter queue's key with KmsKeyArn only
    assert [(s.get("Sid"), s["Action"]) for s in others] == [
        (None, "sqs:SendMessage"),
        ("UseCustomerKey", ["kms:Encrypt", "kms:GenerateDataKey"]),
    ]


def test_the_role_is_systems_managers_alone_with_the_default_instance_policy(cfn: dict[str, Any]) -> None:
    role = cfn["Resources"]["HostManagementRole"]["Properties"]
    [trust] = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust == {"Effect": "Allow", "Principal": {"Service": "ssm.amazonaws.com"}, "Action": "sts:AssumeRole"}
    assert role["ManagedPolicyArns"] == [
        {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedEC2InstanceDefaultPolicy"}
    ]
    assert "Policies" not in role


def test_the_custom_resource_hands_its_function_what_it_reads(cfn: dict[str, Any]) -> None:
    resource = cfn["Resources"]["HostManagement"]
    assert resource["Type"] == "Custom::DefaultHostManagement"
    properties = resource["Properties"]
    assert properties["ServiceToken"] == {"Fn::GetAtt": ["HostManagementFunction", "Arn"]}
    assert properties["RoleName"] == {"Ref": "HostManagementRole"}  # the setting's value: the role's name
    assert properties["Regions"] == {"Ref": "GovernedRegions"}
    assert properties["HomeRegion"] == {"Ref": "AWS::Region"}
    # As deployed: GovernedRegions empty means the stack's own region, as for every other function.
    assert regions_of({"Regions": "", "HomeRegion": "eu-west-1"}) == ["eu-west-1"]
    assert regions_of({"Regions": "us-east-1,us-west-2", "HomeRegion": "eu-west-1"}) == ["us-east-1", "us-west-2"]


def test_the_weekly_digest_may_only_read_the_one_setting_in_each_region(cfn: dict[str, Any]) -> None:
    # The digest says why a machine Systems Manager does not list cannot answer the activity check: it reads
    # whether Default Host Management Configuration is on in each governed region (it read its own region's
    # only, and every other region's machines were told a read refused), nothing more.
    granted = [s for role, s in statements(cfn) if role == "WeeklyDigestFunctionRole"]
    settings = [s for s in granted if any("ServiceSetting" in a for a in as_list(s["Action"]))]
    assert settings == [
        {
            "Sid": "ReadDefaultHostManagement",
            "Effect": "Allow",
            "Action": "ssm:GetServiceSetting",
            "Resource": {
                "Fn::Sub": SETTING_ARN,
            },
        }
    ]
    assert SETTING_ARN.endswith(HOST_MANAGEMENT_SETTING)  # the setting the digest reads (digest/weekly/reach.py)
