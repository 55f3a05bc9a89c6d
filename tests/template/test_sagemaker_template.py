"""The SageMaker statements of the template: as tight as EC2's, checked against AWS's Service Authorization
Reference for SageMaker ("Actions, resources, and condition keys for Amazon SageMaker AI").

What the reference says, and what follows here:
- StopNotebookInstance, DeleteEndpoint and DeleteApp have no action-level condition key (DeleteApp only
  sagemaker:OwnerUserProfileArn and sagemaker:SpaceSharingType): no sagemaker:InstanceTypes, which only the
  Create*/Update* actions (CreateNotebookInstance, CreateEndpointConfig, CreateApp, UpdateNotebookInstance...)
  support. Their resource types (notebook-instance, endpoint, app) support aws:ResourceTag/${TagKey}: the
  rights are scoped by ARN and by the costguard:stop-after tag (written only on accelerated types, after a
  warning) and never on costguard:exempt.
- AddTags and DeleteTags support aws:TagKeys (and AddTags aws:RequestTag): costguard writes its own keys only.
- CreateEndpoint supports aws:RequestTag and aws:TagKeys only: Recreate must carry costguard:recreated-by.
- cloudwatch:PutMetricData has no resource-level permission; cloudwatch:namespace scopes it.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from costguard.aws.sagemaker import NOTEBOOK_NAMESPACE
from costguard.core import tags
from testing.handlers import load_event
from tests.template.test_template import as_list, matches_pattern, rule_patterns, statements

ACCOUNT_ARN = "arn:${AWS::Partition}:sagemaker:*:${AWS::AccountId}:"
WARNED_AND_NOT_EXEMPT = {f"aws:ResourceTag/{tags.STOP_AFTER}": "false", f"aws:ResourceTag/{tags.EXEMPT}": "true"}


def sagemaker_grants(cfn: dict[str, Any], *actions: str) -> list[tuple[str, dict[str, Any]]]:
    return [(r, s) for r, s in statements(cfn) if set(actions) & set(as_list(s["Action"]))]


def test_stops_and_deletions_only_on_resources_costguard_warned_and_never_on_exempt_ones(cfn: dict[str, Any]) -> None:
    expected = {
        "sagemaker:StopNotebookInstance": "notebook-instance/*",
        "sagemaker:DeleteEndpoint": "endpoint/*",
        "sagemaker:DeleteApp": "app/*",
    }
    for action, resource in expected.items():
        grants = sagemaker_grants(cfn, action)
        # The sweep's, and the buttons' "Stop now" / "Delete now" on a warning: the same act, the same bounds.
        assert sorted(role for role, _ in grants) == ["ButtonsFunctionRole", "SageMakerStopperFunctionRole"]
        for _, statement in grants:
            assert as_list(statement["Action"]) == [action]
            assert statement["Resource"] == {"Fn::Sub": ACCOUNT_ARN + resource}
            assert statement["Condition"] == {"Null": WARNED_AND_NOT_EXEMPT}
            assert "sagemaker:InstanceTypes" not in json.dumps(statement)  # the reference has none for these


def test_deletions_are_off_by_default_and_their_rights_exist_only_when_turned_on(sam_template: dict[str, Any]) -> None:
    params = sam_template["Parameters"]
    assert params["EndpointsDelete"]["Default"] == params["StudioAppsDelete"]["Default"] == "false"
    role = sam_template["Resources"]["SageMakerStopperFunction"]["Properties"]["Policies"][0]["Statement"]
    conditional = {raw["Fn::If"][1]["Sid"]: raw["Fn::If"][0] for raw in role if "Fn::If" in raw}
    assert conditional["DeleteWarnedEndpointsOnly"] == "EndpointsDeleteOn"
    assert conditional["TagKeptEndpointConfigs"] == "EndpointsDeleteOn"
    assert conditional["DeleteWarnedAppsOnly"] == "StudioAppsDeleteOn"
    buttons = sam_template["Resources"]["ButtonsFunction"]["Properties"]["Policies"][0]["Statement"]
    assert [
        raw["Fn::If"][0] for raw in buttons if "Fn::If" in raw and raw["Fn::If"][1]["Sid"] == "RecreateEndpointsOnly"
    ] == ["EndpointsRecreateOn"]


def test_sagemaker_tag_writes_are_limited_to_costguard_keys(cfn: dict[str, Any]) -> None:
    grants = sagemaker_grants(cfn, "sagemaker:AddTags", "sagemaker:DeleteTags")
    assert sorted({r for r, _ in grants}) == [
        "ButtonsFunctionRole",
        "OwnerTaggerFunctionRole",
        "SageMakerStopperFunctionRole",
    ]
    for role, statement in grants:
        condition = statement["Condition"]
        keys = condition.get("ForAllValues:StringEquals", condition.get("ForAllValues:StringLike", {}))["aws:TagKeys"]
        literal = [k for k in keys if isinstance(k, str)]
        assert all(k.startswith(tags.PREFIX) for k in literal), (role, keys)
        assert [k for k in keys if not isinstance(k, str)] in ([], [{"Ref": "OwnerTagKey"}])
        # ForAllValues passes a request with no tag keys: keys are required (or, for Recreate, costguard's own tag).
        nulls = statement["Condition"]["Null"]
        assert nulls.get("aws:TagKeys") == "false" or nulls.get(f"aws:RequestTag/{tags.RECREATED_BY}") == "false"
        for resource in as_list(statement["Resource"]):
            assert resource["Fn::Sub"].startswith(ACCOUNT_ARN), (role, resource)
    by_sid = {s["Sid"]: s for _, s in grants}
    stopper = by_sid["TagIdleStateOnly"]["Condition"]
    assert stopper["ForAllValues:StringEquals"]["aws:TagKeys"] == [
        tags.IDLE_WARNED_AT, tags.STOP_AFTER, tags.STOPPED_AT, tags.STOP_REASON
    ]  # fmt: skip
    assert stopper["Null"][f"aws:ResourceTag/{tags.EXEMPT}"] == "true"
    # One key per endpoint deleted from a configuration: a pattern, under costguard's own prefix.
    assert by_sid["TagKeptEndpointConfigs"]["Condition"] == {
        "ForAllValues:StringLike": {"aws:TagKeys": [tags.deleted_endpoint("*")]},
        "Null": {"aws:TagKeys": "false"},
    }
    assert by_sid["TagSageMakerOwnerOnly"]["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"] == [
        {"Ref": "OwnerTagKey"}, tags.CREATED_BY, tags.OWNER_SOURCE
    ]  # fmt: skip


def test_recreate_and_start_again_act_only_on_what_costguard_did(cfn: dict[str, Any]) -> None:
    [(role, recreate)] = sagemaker_grants(cfn, "sagemaker:CreateEndpoint")
    assert role == "ButtonsFunctionRole"
    assert recreate["Condition"] == {
        "ForAllValues:StringEquals": {"aws:TagKeys": [{"Ref": "OwnerTagKey"}, tags.RECREATED_BY]},
        "Null": {f"aws:RequestTag/{tags.RECREATED_BY}": "false"},
    }
    assert {r["Fn::Sub"] for r in recreate["Resource"]} == {
        ACCOUNT_ARN + "endpoint/*",
        ACCOUNT_ARN + "endpoint-config/*",
    }
    [(role, start)] = sagemaker_grants(cfn, "sagemaker:StartNotebookInstance")
    assert role == "ButtonsFunctionRole"
    assert start["Condition"] == {"Null": {f"aws:ResourceTag/{tags.STOPPED_AT}": "false"}}


def test_notebooks_may_publish_costguards_activity_metrics_and_nothing_else(cfn: dict[str, Any]) -> None:
    policy = cfn["Resources"]["NotebookActivityPolicy"]
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "cloudwatch:PutMetricData"
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": NOTEBOOK_NAMESPACE}}
    assert policy["Properties"]["Roles"] == {
        "Fn::If": ["HasNotebookRoles", {"Fn::Split": [",", {"Ref": "NotebookExecutionRoles"}]}, {"Ref": "AWS::NoValue"}]
    }
    assert cfn["Parameters"]["NotebookExecutionRoles"]["Default"] == ""


def test_sagemaker_is_a_feature_on_by_default_with_its_own_schedule(cfn: dict[str, Any]) -> None:
    assert cfn["Parameters"]["SageMakerGovernance"]["Default"] == "true"
    assert cfn["Conditions"]["SageMakerGovernanceOn"] == {"Fn::Equals": [{"Ref": "SageMakerGovernance"}, "true"]}
    for name in (
        "SageMakerStopperFunction",
        "SageMakerStopperLogGroup",
        "NotebookActivityConfig",
        "NotebookActivityPolicy",
    ):
        assert cfn["Resources"][name]["Condition"] == "SageMakerGovernanceOn", name
    schedule = cfn["Resources"]["SageMakerStopperFunctionSweep"]["Properties"]
    assert json.loads(schedule["Target"]["Input"]) == load_event("sagemaker_stopper/sweep.json")
    assert schedule["ScheduleExpression"] == {"Ref": "SageMakerSweepSchedule"}
    # The EC2 idle stopper's role has no SageMaker right, and the SageMaker stopper's no EC2 one.
    ec2 = [a for r, s in statements(cfn) if r == "IdleStopperFunctionRole" for a in as_list(s["Action"])]
    assert not any(a.startswith("sagemaker:") for a in ec2)
    sm = [a for r, s in statements(cfn) if r == "SageMakerStopperFunctionRole" for a in as_list(s["Action"])]
    assert not any(a.startswith(("ec2:", "ssm:", "autoscaling:")) for a in sm)


@pytest.mark.parametrize(
    ("fixture", "matches"),
    [
        ("owner_tagger/sagemaker-createnotebookinstance.json", True),
        ("owner_tagger/sagemaker-createendpoint.json", True),
        ("owner_tagger/sagemaker-createapp.json", True),
        ("owner_tagger/runinstances-iam-user.json", False),
    ],
)
def test_the_sagemaker_create_rule_matches_the_create_calls(cfn: dict[str, Any], fixture: str, matches: bool) -> None:
    assert matches_pattern(rule_patterns(cfn)["OwnerTaggerFunctionSageMakerCreate"], load_event(fixture)) is matches


# ---------------------------------------------------------------- the lifecycle configuration's script


def test_the_lifecycle_script_is_fixed_text(sam_template: dict[str, Any]) -> None:
    # Its reporter is programs/notebook_reporter.py (tests/programs), written in by `make render`.
    [start] = sam_template["Resources"]["NotebookActivityConfig"]["Properties"]["OnStart"]
    content = start["Content"]["Fn::Base64"]
    assert "{{" not in content  # a fixed script: nothing a caller fills in
    assert "${" not in content


def test_the_lifecycle_script_fits_sagemakers_limit_and_finds_the_notebooks_python(
    sam_template: dict[str, Any],
) -> None:
    # NotebookInstanceLifecycleHook.Content: "A base64-encoded string ... Maximum length of 16384" (SageMaker
    # API reference, checked); its PATH is /sbin:bin:/usr/sbin:/usr/bin and it must finish within 5 minutes.
    [start] = sam_template["Resources"]["NotebookActivityConfig"]["Properties"]["OnStart"]
    content = start["Content"]["Fn::Base64"]
    assert len(base64.b64encode(content.encode())) <= 16384
    # The Python AWS's auto-stop sample runs (it has boto3), tried first; the script only installs a cron job.
    assert content.index("envs/JupyterSystemEnv/bin/python") < content.index("/usr/bin/python3")
    assert "sleep" not in content.split("\nPY\n", 1)[1]


def test_a_keep_click_may_add_only_the_keep_and_remove_only_the_warning(cfn: dict[str, Any]) -> None:
    # The buttons role could AddTags costguard:stop-after itself (one statement for both verbs): a keep needs
    # only to add keep-until and kept-by, and to remove the warning.
    grants = [(r, s) for r, s in sagemaker_grants(cfn, "sagemaker:AddTags", "sagemaker:DeleteTags")]
    buttons = [s for r, s in grants if r == "ButtonsFunctionRole"]

    def keys(verb: str) -> set[str]:
        return {
            k if isinstance(k, str) else json.dumps(k)
            for s in buttons
            if verb in as_list(s["Action"])
            for k in {
                **s["Condition"].get("ForAllValues:StringEquals", {}),
                **s["Condition"].get("ForAllValues:StringLike", {}),
            }["aws:TagKeys"]
        }

    keep_and_recreate = {tags.KEEP_UNTIL, tags.KEPT_BY, tags.RECREATED_BY, json.dumps({"Ref": "OwnerTagKey"})}
    # Stop now and Delete now record what they did (Start it again and Recreate need it); never the warning itself.
    acted_now = {tags.STOPPED_AT, tags.STOP_REASON, tags.deleted_endpoint("*")}
    assert keys("sagemaker:AddTags") == keep_and_recreate | acted_now
    assert tags.STOP_AFTER not in keys("sagemaker:AddTags")
    assert keys("sagemaker:DeleteTags") == {tags.IDLE_WARNED_AT, tags.STOP_AFTER}
    [recreate_tags] = [s for s in buttons if s["Sid"] == "TagRecreatedEndpointsOnly"]
    assert as_list(recreate_tags["Action"]) == ["sagemaker:AddTags"]
    assert recreate_tags["Resource"] == {"Fn::Sub": ACCOUNT_ARN + "endpoint/*"}, "not on configurations"
