"""Template checks: least-privilege IAM, the safety settings every function needs, triggers that match."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from costguard.core import tags
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.activity import parse_report
from testing.handlers import ROOT, load_event
from testing.template import activity_check_script

# Actions AWS offers no resource-level permission for: the only ones allowed on Resource "*".
RESOURCELESS_READS = {
    "ec2:DescribeInstances",
    "ec2:DescribeVolumes",
    "ec2:DescribeSpotInstanceRequests",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeReservedInstances",
    "ec2:DescribeCapacityReservations",
    "autoscaling:DescribeAutoScalingGroups",
    "cloudtrail:LookupEvents",
    "cloudwatch:GetMetricData",
    "cloudwatch:ListMetrics",
    "cloudwatch:DescribeAlarms",
    "pricing:GetProducts",
    "savingsplans:DescribeSavingsPlans",
    "ce:GetCostAndUsage",
    "ce:GetCostForecast",
    "ce:GetReservationUtilization",
    "ce:GetReservationCoverage",
    "ce:GetSavingsPlansUtilization",
    "ce:GetSavingsPlansUtilizationDetails",
    "ce:GetSavingsPlansCoverage",
    "ce:GetReservationPurchaseRecommendation",
    "ce:GetSavingsPlansPurchaseRecommendation",
    "ssm:DescribeInstanceInformation",
    "ssm:ListCommandInvocations",
    # SageMaker's List actions name no resource type in the Service Authorization Reference (ListTags does:
    # it is granted on this account's SageMaker ARNs instead).
    "sagemaker:ListNotebookInstances",
    "sagemaker:ListEndpoints",
    "sagemaker:ListApps",
    "sagemaker:ListDomains",
    "sagemaker:ListUserProfiles",
    "sagemaker:ListSpaces",
}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(cfn: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, resource in cfn["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role":
            for policy in resource["Properties"].get("Policies", []):
                for raw in as_list(policy["PolicyDocument"]["Statement"]):
                    # A conditional statement, as deployed with its condition true (the default).
                    yield name, raw["Fn::If"][1] if "Fn::If" in raw else raw


def functions(cfn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: r["Properties"] for n, r in cfn["Resources"].items() if r["Type"] == "AWS::Lambda::Function"}


def test_no_iam_action_has_a_wildcard(cfn: dict[str, Any]) -> None:
    found = [(role, a) for role, s in statements(cfn) for a in as_list(s.get("Action", [])) if "*" in a]
    assert found == []


# The one managed policy beside basic execution: X-Ray's write-only one, which SAM attaches with Tracing
# Active (PutTraceSegments and PutTelemetryRecords have no resource-level permissions: Resource "*").
XRAY_WRITE = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"
HOST_MANAGEMENT_POLICY = "AmazonSSMManagedEC2InstanceDefaultPolicy"  # Default Host Management Configuration's


def test_roles_use_no_managed_policies_beyond_basic_execution_and_x_ray_writes(cfn: dict[str, Any]) -> None:
    for name, resource in cfn["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role":
            for arn in resource["Properties"].get("ManagedPolicyArns", []):
                if name == "HostManagementRole":  # not a function's: the one Systems Manager lends every instance
                    assert arn == {"Fn::Sub": f"arn:${{AWS::Partition}}:iam::aws:policy/{HOST_MANAGEMENT_POLICY}"}
                    continue
                assert "AWSLambdaBasicExecutionRole" in json.dumps(arn) or arn == XRAY_WRITE, (name, arn)


def test_tracing_follows_its_parameter_on_every_function(
    cfn: dict[str, Any], cfn_untraced: dict[str, Any], sam_template: dict[str, Any]
) -> None:
    assert sam_template["Parameters"]["Tracing"]["Default"] == "Active"
    assert sam_template["Parameters"]["Tracing"]["AllowedValues"] == ["Active", "Disabled"]
    for traced_cfn, on in ((cfn, True), (cfn_untraced, False)):
        roles = {n: r["Properties"] for n, r in traced_cfn["Resources"].items() if r["Type"] == "AWS::IAM::Role"}
        assert len(functions(traced_cfn)) == len([d for d in (ROOT / "functions").iterdir() if (d / "app.py").exists()])
        for name, props in functions(traced_cfn).items():
            assert props.get("TracingConfig") == ({"Mode": {"Ref": "Tracing"}} if on else None), name
            # Powertools' Tracer is off exactly when the function is not traced.
            assert props["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == {
                "Fn::If": ["TracingOn", "false", "true"]
            }
            role = roles[props["Role"]["Fn::GetAtt"][0]]
            assert (XRAY_WRITE in role.get("ManagedPolicyArns", [])) is on, name
    assert sam_template["Conditions"]["TracingOn"] == {"Fn::Equals": [{"Ref": "Tracing"}, "Active"]}


def test_resource_star_only_for_reads_without_resource_level_permissions(cfn: dict[str, Any]) -> None:
    for role, statement in statements(cfn):
        if "*" in as_list(statement.get("Resource")):
            assert statement["Effect"] == "Allow"
            extra = set(as_list(statement["Action"])) - RESOURCELESS_READS
            assert extra == set(), f"{role} grants {extra} on every resource"


def test_tag_writes_are_limited_to_costguard_keys(cfn: dict[str, Any]) -> None:
    grants = [
        (role, s) for role, s in statements(cfn) if {"ec2:CreateTags", "ec2:DeleteTags"} & set(as_list(s["Action"]))
    ]
    assert len(grants) >= 2, "owner_tagger and idle_stopper both tag"
    for role, statement in grants:
        assert set(as_list(statement["Action"])) <= {"ec2:CreateTags", "ec2:DeleteTags"}, role
        keys = statement["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"]
        literal = [k for k in keys if isinstance(k, str)]
        assert literal, role
        assert all(k.startswith(tags.PREFIX) for k in literal), keys
        assert [k for k in keys if not isinstance(k, str)] in ([], [{"Ref": "OwnerTagKey"}])
        # ForAllValues passes a request with no tag keys at all: require that keys are present.
        assert statement["Condition"]["Null"] == {"aws:TagKeys": "false"}
        for resource in as_list(statement["Resource"]):
            assert ":instance/*" in resource["Fn::Sub"] or ":volume/*" in resource["Fn::Sub"]


def test_idle_stopper_tags_exactly_its_state_keys(cfn: dict[str, Any]) -> None:
    [statement] = [
        s for r, s in statements(cfn) if r == "IdleStopperFunctionRole" and s.get("Sid") == "TagIdleStateOnly"
    ]
    keys = statement["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"]
    assert keys == [
        tags.IDLE_WARNED_AT,
        tags.STOP_AFTER,
        tags.STOPPED_AT,
        tags.STOP_REASON,
        tags.ACTIVITY_CHECK_AT,
        tags.START_AT,
    ]
    # Only on the accelerator families: the activity-check tag, which SendCommand requires, too.
    assert statement["Condition"]["StringLike"]["ec2:InstanceType"] == {
        "Fn::Split": [",", {"Ref": "AcceleratorFamilies"}]
    }


def test_stop_is_allowed_only_for_accelerator_types_and_never_for_exempt_instances(cfn: dict[str, Any]) -> None:
    grants = [(r, s) for r, s in statements(cfn) if "ec2:StopInstances" in as_list(s["Action"])]
    assert sorted(r for r, _ in grants) == ["ButtonsFunctionRole", "IdleStopperFunctionRole"]
    starts = [r for r, s in statements(cfn) if "ec2:StartInstances" in as_list(s["Action"])]
    # The idle stopper's: before working hours, and before learned recurring work.
    assert sorted(starts) == ["ButtonsFunctionRole", "IdleStopperFunctionRole", "IdleStopperFunctionRole"]
    for _, statement in grants:
        assert set(as_list(statement["Action"])) <= {"ec2:StopInstances", "ec2:StartInstances"}
        assert statement["Resource"] == {"Fn::Sub": "arn:${AWS::Partition}:ec2:*:${AWS::AccountId}:instance/*"}
        assert statement["Condition"]["StringLike"] == {
            "ec2:InstanceType": {"Fn::Split": [",", {"Ref": "AcceleratorFamilies"}]}
        }
        assert statement["Condition"]["Null"] == {"aws:ResourceTag/costguard:exempt": "true"}


def test_every_start_the_idle_stopper_may_make_spares_exempt_instances(cfn: dict[str, Any]) -> None:
    starts = [
        s for r, s in statements(cfn) if r == "IdleStopperFunctionRole" and "ec2:StartInstances" in as_list(s["Action"])
    ]
    assert [s["Sid"] for s in starts] == [
        "StartOnlyAcceleratedWithWorkingHours",
        "StartOnlyAcceleratedWithLearnedStart",
    ]
    for statement in starts:  # the same condition as the stop's: an exempt machine is never touched
        assert statement["Condition"]["Null"]["aws:ResourceTag/costguard:exempt"] == "true"


def test_accelerator_families_default_matches_the_code(sam_template: dict[str, Any]) -> None:
    default = sam_template["Parameters"]["AcceleratorFamilies"]["Default"]
    assert tuple(default.split(",")) == IdlePolicy().accelerator_families


def test_alarm_rights_are_limited_to_costguard_idle_alarms(cfn: dict[str, Any]) -> None:
    grants = [
        s
        for _, s in statements(cfn)
        if {"cloudwatch:PutMetricAlarm", "cloudwatch:DeleteAlarms"} & set(as_list(s["Action"]))
    ]
    assert grants
    for statement in grants:
        assert statement["Resource"]["Fn::Sub"].endswith(":alarm:costguard-idle-*")


def test_owner_tagger_tags_exactly_the_three_owner_keys(cfn: dict[str, Any]) -> None:
    [statement] = [
        s for role, s in statements(cfn) if role == "OwnerTaggerFunctionRole" and s.get("Sid") == "TagOwnerOnly"
    ]
    keys = statement["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"]
    assert keys == [{"Ref": "OwnerTagKey"}, tags.CREATED_BY, tags.OWNER_SOURCE]


def test_slack_secret_is_readable_by_name_only(cfn: dict[str, Any]) -> None:
    grants = [s for _, s in statements(cfn) if "secretsmanager:GetSecretValue" in as_list(s["Action"])]
    assert grants
    for statement in grants:
        assert statement["Resource"]["Fn::Sub"].endswith(":secret:${SlackSecretName}-??????")


def test_every_function_is_arm64_python313_and_nothing_it_is_asked_is_lost(cfn: dict[str, Any]) -> None:
    assert functions(cfn)
    dead_letters = {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}
    for name, props in functions(cfn).items():
        assert props["Runtime"] == "python3.13", name
        assert props["Architectures"] == ["arm64"], name
        if name == "ButtonsFunction":  # fed by the click queue: its redrive policy is its dead-letter queue
            redrive = cfn["Resources"]["ClickQueue"]["Properties"]["RedrivePolicy"]
            assert redrive["deadLetterTargetArn"] == dead_letters
        elif name != "SlackReceiverFunction":  # called synchronously: a failure is Slack's answer, not lost
            assert props["DeadLetterConfig"]["TargetArn"] == dead_letters, name
        env = props["Environment"]["Variables"]
        assert env["POWERTOOLS_SERVICE_NAME"] == "costguard"
        assert {"COSTGUARD_MODE", "SLACK_SECRET_NAME", "STATE_TABLE", "GOVERNED_REGIONS"} <= env.keys()


def test_every_function_has_a_log_group_with_retention(sam_template: dict[str, Any], cfn: dict[str, Any]) -> None:
    groups = [r["Properties"] for r in sam_template["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"]
    named = {g["LogGroupName"]["Fn::Sub"] for g in groups}
    for name in functions(cfn):
        assert f"/aws/lambda/${{{name}}}" in named
    assert all(g["RetentionInDays"] == {"Ref": "LogRetentionDays"} for g in groups)


def test_no_secret_value_in_template_or_samconfig(sam_template: dict[str, Any]) -> None:
    text = json.dumps(sam_template) + (ROOT / "samconfig.toml").read_text()
    assert re.findall(r"xox[abpr]-[0-9A-Za-z-]{8,}|hooks\.slack\.com/services/T", text) == []


def test_state_table_is_on_demand_with_ttl(sam_template: dict[str, Any]) -> None:
    props = sam_template["Resources"]["StateTable"]["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


def test_mode_parameter_defaults_to_dry_run(sam_template: dict[str, Any]) -> None:
    param = sam_template["Parameters"]["Mode"]
    assert param["AllowedValues"] == ["enforce", "notify-only", "dry-run"]
    assert param["Default"] == "dry-run"


def rule_patterns(cfn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: r["Properties"]["EventPattern"] for n, r in cfn["Resources"].items() if r["Type"] == "AWS::Events::Rule"}


def matches_pattern(pattern: dict[str, Any], event: Any) -> bool:
    """EventBridge matching for the pattern forms costguard uses: nested objects and lists of values.

    (moto's TestEventPattern returns no result, so the match is done here; `test_patterns_use_only_*`
    below keeps the patterns within what this function understands.)
    """
    if not isinstance(event, dict):
        return False
    for key, expected in pattern.items():
        if key not in event:
            return False
        value = event[key]
        if isinstance(expected, dict):
            if not matches_pattern(expected, value):
                return False
        elif not any(_matches(e, v) for e in expected for v in (value if isinstance(value, list) else [value])):
            return False
    return True


def _matches(expected: Any, value: Any) -> bool:
    if isinstance(expected, dict):  # content filters: only `prefix` is used
        return isinstance(value, str) and value.startswith(expected["prefix"])
    return bool(expected == value)


def test_patterns_use_only_values_and_nesting(cfn: dict[str, Any]) -> None:
    def plain(pattern: Any) -> bool:
        if isinstance(pattern, dict):
            return all(plain(v) for v in pattern.values())
        return isinstance(pattern, list) and all(
            isinstance(v, (str, int, bool)) or (isinstance(v, dict) and set(v) == {"prefix"}) for v in pattern
        )

    assert rule_patterns(cfn)
    for name, pattern in rule_patterns(cfn).items():
        assert plain(pattern), name


@pytest.mark.parametrize(
    ("rule", "fixture", "matches"),
    [
        ("OwnerTaggerFunctionRunInstances", "owner_tagger/runinstances-iam-user.json", True),
        ("OwnerTaggerFunctionRunInstances", "owner_tagger/runinstances-autoscaling.json", True),
        ("OwnerTaggerFunctionRunInstances", "owner_tagger/stopinstances.json", False),
        ("IdleStopperFunctionIdleAlarm", "idle_stopper/alarm-state-change.json", True),
        ("IdleStopperFunctionIdleAlarm", "idle_stopper/alarm-back-to-ok.json", False),
        ("IdleStopperFunctionInstanceState", "idle_stopper/ec2-state-running.json", True),
        ("IdleStopperFunctionInstanceState", "idle_stopper/ec2-state-stopped.json", True),
        ("IdleStopperFunctionInstanceState", "idle_stopper/ec2-state-documented-sample.json", True),
        ("IdleStopperFunctionInstanceState", "owner_tagger/runinstances-iam-user.json", False),
        ("BudgetAlertsFunctionAnomalyDetected", "budget_alerts/eventbridge-anomaly.json", True),
        ("BudgetAlertsFunctionAnomalyDetected", "idle_stopper/alarm-state-change.json", False),
    ],
)
def test_rule_patterns_match_the_real_shaped_events(
    cfn: dict[str, Any], rule: str, fixture: str, matches: bool
) -> None:
    assert matches_pattern(rule_patterns(cfn)[rule], load_event(fixture)) is matches


@pytest.mark.parametrize(
    ("schedule", "fixture"),
    [
        ("OwnerTaggerFunctionBackfill", "owner_tagger/backfill.json"),
        ("IdleStopperFunctionSweep", "idle_stopper/sweep.json"),
        ("CommitmentTrackerFunctionDaily", "commitment_tracker/daily.json"),
        ("WeeklyDigestFunctionWeekly", "weekly_digest/weekly.json"),
        ("OrganizationDigestFunctionWeekly", "organization_digest/weekly.json"),
        ("DeepDiveFunctionQuarterly", "deep_dive/quarterly.json"),
    ],
)
def test_schedules_send_the_input_the_handlers_expect(cfn: dict[str, Any], schedule: str, fixture: str) -> None:
    props = cfn["Resources"][schedule]["Properties"]
    assert json.loads(props["Target"]["Input"]) == load_event(fixture)
    assert props["Target"]["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}


def test_budget_notifies_costguard_at_every_tier_and_the_forecast(cfn: dict[str, Any]) -> None:
    budget = cfn["Resources"]["MonthlyBudget"]["Properties"]
    notes = budget["NotificationsWithSubscribers"]
    assert [n["Notification"]["NotificationType"] for n in notes] == ["ACTUAL"] * 4 + ["FORECASTED"]
    assert [n["Notification"]["Threshold"] for n in notes[:4]] == [
        {"Fn::Select": [i, {"Ref": "BudgetTiers"}]} for i in range(4)
    ]
    assert all(n["Subscribers"] == [{"SubscriptionType": "SNS", "Address": {"Ref": "BudgetTopic"}}] for n in notes)
    assert budget["Budget"]["TimeUnit"] == "MONTHLY"


def test_only_aws_budgets_and_cost_anomaly_detection_of_this_account_may_publish_to_the_budget_topic(
    cfn: dict[str, Any],
) -> None:
    budgets, anomalies = cfn["Resources"]["BudgetTopicPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    # costalerts.amazonaws.com is the service principal AWS documents for an anomaly subscription's topic.
    assert [budgets["Principal"], anomalies["Principal"]] == [
        {"Service": "budgets.amazonaws.com"},
        {"Service": "costalerts.amazonaws.com"},
    ]
    for statement in (budgets, anomalies):
        assert (statement["Effect"], statement["Action"], statement["Resource"]) == (
            "Allow",
            "sns:Publish",
            {"Ref": "BudgetTopic"},
        )
        assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}


def test_anomaly_detected_events_reach_budget_alerts_with_retries_a_dead_letter_queue_and_one_permission(
    cfn: dict[str, Any],
) -> None:
    rule = cfn["Resources"]["BudgetAlertsFunctionAnomalyDetected"]
    assert rule["Condition"] == "BudgetAlertsOn"
    assert rule["Properties"]["EventPattern"] == {"source": ["aws.ce"], "detail-type": ["Anomaly Detected"]}
    [target] = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["BudgetAlertsFunction", "Arn"]}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] > 0
    invokers = [
        r["Properties"]
        for r in cfn["Resources"].values()
        if r["Type"] == "AWS::Lambda::Permission" and r["Properties"]["FunctionName"] == {"Ref": "BudgetAlertsFunction"}
    ]
    # SNS from the budget topic and the ops topic (costguard's own alarms, da6f759), EventBridge from this
    # rule only: nothing else may invoke it.
    assert sorted((p["Principal"], json.dumps(p["SourceArn"])) for p in invokers) == [
        ("events.amazonaws.com", json.dumps({"Fn::GetAtt": ["BudgetAlertsFunctionAnomalyDetected", "Arn"]})),
        ("sns.amazonaws.com", json.dumps({"Ref": "BudgetTopic"})),
        ("sns.amazonaws.com", json.dumps({"Ref": "OpsTopic"})),
    ]


def test_budget_alerts_reads_cost_explorer_for_anomalies_with_no_new_permission(cfn: dict[str, Any]) -> None:
    # The anomaly comes in the event; who drives it is GetCostAndUsage, which budget alerts already had.
    actions = sorted(
        action
        for role, statement in statements(cfn)
        if role == "BudgetAlertsFunctionRole"
        for action in as_list(statement["Action"])
        if action.startswith("ce:")
    )
    assert actions == ["ce:GetCostAndUsage", "ce:GetCostForecast"]


def test_budget_alerts_function_is_subscribed_to_the_budget_topic(cfn: dict[str, Any]) -> None:
    subscriptions = [r["Properties"] for r in cfn["Resources"].values() if r["Type"] == "AWS::SNS::Subscription"]
    assert {
        "Endpoint": {"Fn::GetAtt": ["BudgetAlertsFunction", "Arn"]},
        "Protocol": "lambda",
        "TopicArn": {"Ref": "BudgetTopic"},
    } in subscriptions


def test_budget_tier_defaults_are_the_quarters(sam_template: dict[str, Any]) -> None:
    assert sam_template["Parameters"]["BudgetTiers"]["Default"] == "25,50,75,100"


def test_the_only_public_endpoint_is_the_slack_receiver(cfn: dict[str, Any]) -> None:
    urls = [(n, r["Properties"]) for n, r in cfn["Resources"].items() if r["Type"] == "AWS::Lambda::Url"]
    assert [(n, p["AuthType"]) for n, p in urls] == [("SlackReceiverFunctionUrl", "NONE")]
    # The hub's Slack relay takes its organization's principals only (tests/template/test_slack_relay_template.py).
    public = [
        r["Properties"]
        for r in cfn["Resources"].values()
        if r["Type"] == "AWS::Lambda::Permission" and r["Properties"].get("Principal") == "*"
        if "PrincipalOrgID" not in r["Properties"]
    ]
    # Both public permissions are for the Function URL only (the second is AWS's newer requirement).
    assert sorted((p["Action"], p.get("FunctionUrlAuthType"), p.get("InvokedViaFunctionUrl")) for p in public) == [
        ("lambda:InvokeFunction", None, True),
        ("lambda:InvokeFunctionUrl", "NONE", None),
    ]
    assert all(p["FunctionName"] == {"Ref": "SlackReceiverFunction"} for p in public)


def test_the_public_receiver_can_read_the_signing_secret_and_queue_clicks_and_nothing_else(
    cfn: dict[str, Any],
) -> None:
    role = cfn["Resources"]["SlackReceiverFunctionRole"]["Properties"]
    granted = {
        (action, json.dumps(s["Resource"], sort_keys=True))
        for r, s in statements(cfn)
        if r == "SlackReceiverFunctionRole"
        for action in as_list(s["Action"])
    }
    arn = "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${SlackSecretName}-??????"
    secret = {"Fn::Sub": arn}
    key = {"Ref": "KmsKeyArn"}
    assert granted == {
        ("secretsmanager:GetSecretValue", json.dumps(secret, sort_keys=True)),
        ("sqs:SendMessage", json.dumps({"Fn::GetAtt": ["ClickQueue", "Arn"]}, sort_keys=True)),
        ("kms:GenerateDataKey", json.dumps(key, sort_keys=True)),  # only with a KmsKeyArn: the queue's key
        ("kms:Decrypt", json.dumps(key, sort_keys=True)),
        # Only in a hub (MemberClickQueues set): each member's click queue, named one by one.
        ("sqs:SendMessage", json.dumps({"Fn::Split": [",", {"Ref": "MemberClickQueues"}]}, sort_keys=True)),
        # Only in an organization's hub: the members' <stack>-clicks queues, in its organization's accounts only.
        ("sqs:SendMessage", json.dumps({"Fn::Sub": "arn:${AWS::Partition}:sqs:*:*:${AWS::StackName}-clicks"})),
    }
    assert not any(a.startswith(("ec2:", "dynamodb:", "ssm:", "autoscaling:")) for a, _ in granted)
    # No managed policy but CloudWatch Logs and, with Tracing Active, X-Ray's write-only telemetry (its
    # traces: Slack's 3-second deadline is where a slow call hurts most), and no dead-letter queue.
    managed = [json.dumps(m) for m in role.get("ManagedPolicyArns", [])]
    assert len(managed) == 2
    assert "AWSLambdaBasicExecutionRole" in managed[0]
    assert json.loads(managed[1]) == XRAY_WRITE
    assert "DeadLetterConfig" not in functions(cfn)["SlackReceiverFunction"]


def test_the_receiver_has_its_own_concurrency_so_a_flood_cannot_take_the_accounts(cfn: dict[str, Any]) -> None:
    receiver = functions(cfn)["SlackReceiverFunction"]
    assert receiver["ReservedConcurrentExecutions"] == {
        "Fn::If": ["HasReceiverConcurrency", {"Ref": "ReceiverConcurrency"}, {"Ref": "AWS::NoValue"}]
    }
    assert cfn["Parameters"]["ReceiverConcurrency"]["Default"] == 10


def test_the_worker_that_acts_has_no_public_endpoint(cfn: dict[str, Any]) -> None:
    assert "ButtonsFunctionUrl" not in cfn["Resources"]
    sends = [s for r, s in statements(cfn) if r == "ButtonsFunctionRole" and "sqs:SendMessage" in as_list(s["Action"])]
    assert sends == []


def test_a_customer_key_encrypts_the_table_the_queues_and_the_log_groups(cfn: dict[str, Any]) -> None:
    resources = cfn["Resources"]
    on_key = {"Fn::If": ["HasKmsKey", {"Ref": "KmsKeyArn"}, {"Ref": "AWS::NoValue"}]}
    assert resources["StateTable"]["Properties"]["SSESpecification"] == {
        "SSEEnabled": True,
        "SSEType": {"Fn::If": ["HasKmsKey", "KMS", {"Ref": "AWS::NoValue"}]},
        "KMSMasterKeyId": on_key,
    }
    queues = [r["Properties"] for n, r in resources.items() if r["Type"] == "AWS::SQS::Queue" and n != "FiguresQueue"]
    assert len(queues) == 2
    # The hub's figures queue is written by other accounts: SQS-managed keys, which need no key policy.
    assert resources["FiguresQueue"]["Properties"]["SqsManagedSseEnabled"] is True
    assert "KmsMasterKeyId" not in resources["FiguresQueue"]["Properties"]
    for queue in queues:
        assert queue["KmsMasterKeyId"] == on_key
        assert queue["SqsManagedSseEnabled"] == {"Fn::If": ["HasKmsKey", {"Ref": "AWS::NoValue"}, True]}
    groups = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Logs::LogGroup"]
    assert len(groups) == len(functions(cfn))  # every function's
    assert all(g["KmsKeyId"] == on_key for g in groups)
    assert resources["StateTable"]["DeletionPolicy"] == resources["StateTable"]["UpdateReplacePolicy"] == "Retain"


def test_every_alarm_reaches_a_topic_cloudwatch_can_publish_to_and_the_alerts_channel(cfn: dict[str, Any]) -> None:
    # CloudWatch cannot use the AWS-managed SNS key (its policy cannot allow cloudwatch.amazonaws.com): an
    # alarm aimed at a topic under it is never delivered, and no error says so.
    resources = cfn["Resources"]
    targets = {
        action["Ref"]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        for action in r["Properties"].get("AlarmActions", [])
        if isinstance(action, dict) and "Ref" in action
    }
    assert targets == {"OpsTopic"}
    key = resources["OpsTopic"]["Properties"].get("KmsMasterKeyId")
    assert key == {"Fn::If": ["HasKmsKey", {"Ref": "KmsKeyArn"}, {"Ref": "AWS::NoValue"}]}
    # The alerts channel hears it even without OpsEmail: budget_alerts reads the topic.
    subscriptions = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::SNS::Subscription" and r["Properties"].get("Protocol") == "lambda"
    ]
    assert any(
        s["TopicArn"] == {"Ref": "OpsTopic"} and s["Endpoint"] == {"Fn::GetAtt": ["BudgetAlertsFunction", "Arn"]}
        for s in subscriptions
    )


TAGGABLE = {
    "AWS::Lambda::Function",
    "AWS::DynamoDB::Table",
    "AWS::SQS::Queue",
    "AWS::SNS::Topic",
    "AWS::Logs::LogGroup",
    "AWS::S3::Bucket",
    "AWS::CloudTrail::Trail",
    "AWS::IAM::Role",
    "AWS::CloudWatch::Alarm",
    "AWS::SSM::Document",
}


def test_every_resource_costguard_creates_says_it_is_costguards(cfn: dict[str, Any]) -> None:
    untagged = []
    for name, resource in cfn["Resources"].items():
        if resource["Type"] not in TAGGABLE:
            continue
        found = resource["Properties"].get("Tags", [])
        pairs = found.items() if isinstance(found, dict) else [(t["Key"], t["Value"]) for t in found]
        if ("application", "costguard") not in pairs:
            untagged.append(name)
    assert untagged == []


def test_the_digest_runs_in_the_teams_own_time(cfn: dict[str, Any]) -> None:
    props = cfn["Resources"]["WeeklyDigestFunctionWeekly"]["Properties"]
    assert props["ScheduleExpression"] == {"Fn::Sub": "cron(0 ${DigestHour} ? * ${DigestDay} *)"}
    assert props["ScheduleExpressionTimezone"] == {"Ref": "TeamTimezone"}


def test_dashboards_written_are_costguards_own(cfn: dict[str, Any]) -> None:
    grants = [s for _, s in statements(cfn) if "cloudwatch:PutDashboard" in as_list(s["Action"])]
    assert [g["Resource"]["Fn::Sub"] for g in grants] == [
        "arn:${AWS::Partition}:cloudwatch::${AWS::AccountId}:dashboard/costguard-*"
    ]


def test_the_activity_check_is_a_costguard_document_with_a_fixed_script_and_no_parameters(
    sam_template: dict[str, Any],
) -> None:
    document = sam_template["Resources"]["ActivityCheckDocument"]
    assert document["Type"] == "AWS::SSM::Document"
    assert document["Condition"] == "HasActivityCheck"
    content = document["Properties"]["Content"]
    assert document["Properties"]["DocumentType"] == "Command"
    assert "parameters" not in content
    [step] = content["mainSteps"]
    assert step["action"] == "aws:runShellScript"
    [command] = step["inputs"]["runCommand"]
    script = command["Fn::Sub"]  # filled in at deploy time, with the SystemServices parameter only
    assert "{{" not in script  # nothing a caller could fill in
    assert re.findall(r"\$\{([^}]*)\}", script) == ["SystemServices"]


def test_the_activity_check_script_prints_a_report_costguard_reads() -> None:
    ran = subprocess.run(
        ["bash", "-c", activity_check_script()], capture_output=True, text=True, timeout=60, check=True
    )
    report = parse_report(ran.stdout)  # this machine has no GPU and no Jupyter: an empty, valid report
    assert report.gpu == ()
    assert len(ran.stdout) < 2500  # Run Command returns the first 2,500 characters of the output


def test_send_command_is_allowed_only_with_the_document_and_only_on_tagged_instances(cfn: dict[str, Any]) -> None:
    grants = [(r, s) for r, s in statements(cfn) if "ssm:SendCommand" in as_list(s["Action"])]
    assert sorted((r, s["Sid"]) for r, s in grants) == [
        ("IdleStopperFunctionRole", "ActivityCheckAcceleratedOnly"),
        ("IdleStopperFunctionRole", "ActivityCheckDocumentOnly"),
    ]
    by_sid = {s["Sid"]: s for _, s in grants}
    document = by_sid["ActivityCheckDocumentOnly"]
    assert as_list(document["Action"]) == ["ssm:SendCommand"]
    assert document["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:document/${ActivityCheckDocument}"
    }
    instances = by_sid["ActivityCheckAcceleratedOnly"]
    assert instances["Resource"] == {"Fn::Sub": "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:instance/*"}
    assert instances["Condition"] == {"Null": {f"ssm:resourceTag/{tags.ACTIVITY_CHECK_AT}": "false"}}


def test_every_checkov_skip_says_why(sam_template: dict[str, Any]) -> None:
    """`make checkov` fails the build; what it is told to skip must carry its reason, here or in .checkov.yaml."""
    skipped = 0
    for name, resource in sam_template["Resources"].items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            assert re.fullmatch(r"CKV2?_AWS_\d+", skip["id"]), (name, skip)
            assert len(skip.get("comment", "")) > 30, f"{name} skips {skip['id']} without a reason"
            skipped += 1
    lines = (ROOT / ".checkov.yaml").read_text().splitlines()
    for i, line in enumerate(lines):
        if m := re.fullmatch(r"\s*- (CKV2?_AWS_\d+)", line):
            j = i
            while lines[j - 1].lstrip().startswith("#"):
                j -= 1
            assert lines[j].lstrip().startswith(f"# {m.group(1)} ("), f"{m.group(1)} skipped without a reason"
            skipped += 1
    assert 0 < skipped <= 12, f"{skipped} checkov checks skipped: fix the template rather than skip more"


FEATURES = {
    "OwnerTaggingOn": ["OwnerTaggerFunction", "OwnerTaggerLogGroup"],
    "IdleStoppingOn": [
        "IdleStopperFunction",
        "ClickQueue",
        "SlackReceiverFunction",
        "ButtonsFunction",
        "ButtonsClicks",
    ],
    "BudgetAlertsOn": ["BudgetTopic", "BudgetTopicPolicy", "BudgetAlertsFunction", "BudgetAlertsLogGroup"],
    "CommitmentRemindersOn": ["CommitmentTrackerFunction", "CommitmentTrackerLogGroup"],
    "WeeklyDigestOn": ["WeeklyDigestFunction", "WeeklyDigestLogGroup"],
}


def test_each_feature_can_be_left_to_another_account_and_is_on_by_default(cfn: dict[str, Any]) -> None:
    resources = cfn["Resources"]
    for condition, names in FEATURES.items():
        parameter = condition.removesuffix("On")
        assert cfn["Parameters"][parameter]["Default"] == "true"  # a standalone stack runs everything
        assert cfn["Conditions"][condition] == {"Fn::Equals": [{"Ref": parameter}, "true"]}
        for name in names:
            assert resources[name].get("Condition") == condition, name
    # What SAM generates for a function (its role, rules, schedules, URL) follows the function's condition.
    assert resources["SlackReceiverFunctionUrl"]["Condition"] == "IdleStoppingOn"
    assert resources["OwnerTaggerFunctionRole"]["Condition"] == "OwnerTaggingOn"
    # The trail, the budget and the activity check need their feature as well as their own switch.
    assert {"Condition": "OwnerTaggingOn"} in cfn["Conditions"]["CreateTrail"]["Fn::And"]
    assert {"Condition": "BudgetAlertsOn"} in cfn["Conditions"]["CreateBudget"]["Fn::And"]
    assert {"Condition": "IdleStoppingOn"} in cfn["Conditions"]["HasActivityCheck"]["Fn::And"]
    # Every resource that is always there stays unconditional: the state table, the DLQ and its alarm.
    assert all("Condition" not in resources[n] for n in ("StateTable", "DeadLetterQueue", "DeadLetterAlarm"))


def test_only_the_hubs_receiver_role_may_send_clicks_to_a_members_queue(cfn: dict[str, Any]) -> None:
    policy = cfn["Resources"]["ClickQueueHubPolicy"]
    assert policy["Condition"] == "IsMember"
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"AWS": {"Ref": "HubReceiverRoleArn"}}  # one role, not the hub's account
    assert statement["Action"] == "sqs:SendMessage"
    assert statement["Resource"] == {"Fn::GetAtt": ["ClickQueue", "Arn"]}
    assert policy["Properties"]["Queues"] == [{"Ref": "ClickQueue"}]
    # A standalone stack (both parameters empty, the defaults) has no policy and routes to no member.
    assert cfn["Parameters"]["HubReceiverRoleArn"]["Default"] == cfn["Parameters"]["MemberClickQueues"]["Default"] == ""
    assert cfn["Conditions"]["HasMembers"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "MemberClickQueues"}, ""]}]}
    route = [
        raw
        for raw in cfn["Resources"]["SlackReceiverFunctionRole"]["Properties"]["Policies"][0]["PolicyDocument"][
            "Statement"
        ]
        if "Fn::If" in raw
    ]
    assert [r["Fn::If"][0] for r in route] == ["HasMembers", "RoutesClicksInOrganization", "HasKmsKey"]
    # The hub hands its receiver role to the members; each member its queue to the hub.
    assert cfn["Outputs"]["SlackReceiverRoleArn"]["Value"] == {"Fn::GetAtt": ["SlackReceiverFunctionRole", "Arn"]}
    assert cfn["Outputs"]["ClickQueueArn"]["Value"] == {"Fn::GetAtt": ["ClickQueue", "Arn"]}


def test_no_role_may_act_on_another_accounts_machines(cfn: dict[str, Any]) -> None:
    for role, statement in statements(cfn):
        acts = [
            a
            for a in as_list(statement["Action"])
            if a.split(":")[1].startswith(("Stop", "Start", "CreateTags", "DeleteTags"))
        ]
        if acts and statement["Effect"] == "Allow":
            for resource in as_list(statement["Resource"]):
                assert "${AWS::AccountId}" in resource["Fn::Sub"], (role, acts)


def test_the_idle_stopper_may_start_only_accelerated_machines_with_working_hours_or_a_learned_start(
    cfn: dict[str, Any],
) -> None:
    grants = [
        s for r, s in statements(cfn) if r == "IdleStopperFunctionRole" and "ec2:StartInstances" in as_list(s["Action"])
    ]
    # One statement per tag: IAM ANDs the conditions of one statement, and either tag is enough. Neither
    # start touches an exempt machine (its owner's word).
    assert sorted((s["Condition"]["Null"] for s in grants), key=sorted) == [
        {f"aws:ResourceTag/{tags.SCHEDULE}": "false", f"aws:ResourceTag/{tags.EXEMPT}": "true"},
        {f"aws:ResourceTag/{tags.START_AT}": "false", f"aws:ResourceTag/{tags.EXEMPT}": "true"},
    ]
    for statement in grants:
        assert statement["Action"] == "ec2:StartInstances"
        assert statement["Resource"] == {"Fn::Sub": "arn:${AWS::Partition}:ec2:*:${AWS::AccountId}:instance/*"}
        assert statement["Condition"]["StringLike"] == {
            "ec2:InstanceType": {"Fn::Split": [",", {"Ref": "AcceleratorFamilies"}]}
        }
    env = functions(cfn)["IdleStopperFunction"]["Environment"]["Variables"]
    assert env["SCHEDULE_LEAD_MINUTES"] == {"Ref": "ScheduleLeadMinutes"}


def test_only_costguards_own_roles_may_write_a_start_at(cfn: dict[str, Any]) -> None:
    writers = [
        (r, sorted(as_list(s["Action"])))
        for r, s in statements(cfn)
        if tags.START_AT in s.get("Condition", {}).get("ForAllValues:StringEquals", {}).get("aws:TagKeys", [])
    ]
    assert sorted(writers) == [
        ("ButtonsFunctionRole", ["ec2:CreateTags", "ec2:DeleteTags"]),  # "Stop now" keeps it; "Don't start it"
        ("IdleStopperFunctionRole", ["ec2:CreateTags", "ec2:DeleteTags"]),
    ]
    [keep] = [s for r, s in statements(cfn) if r == "ButtonsFunctionRole" and s.get("Sid") == "TagKeepAndStopOnly"]
    assert tags.LEARNED_START in keep["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"]


def test_only_the_buttons_may_write_keep_for_runs_the_idle_stopper_reads_it(cfn: dict[str, Any]) -> None:
    writers = [
        (r, s.get("Sid"))
        for r, s in statements(cfn)
        if tags.KEEP_FOR_RUNS in s.get("Condition", {}).get("ForAllValues:StringEquals", {}).get("aws:TagKeys", [])
    ]
    assert writers == [("ButtonsFunctionRole", "TagKeepAndStopOnly")]  # "Keep it for its runs"


def test_the_buttons_may_remove_an_exemption_for_the_offers_keep_for_its_runs_and_never_add_one(
    cfn: dict[str, Any],
) -> None:
    """The offer's click deletes costguard:exempt (AWS refused it before: moto checks no IAM); nothing of the
    buttons' may create it."""
    touching = [
        (r, s.get("Sid"), sorted(as_list(s["Action"])))
        for r, s in statements(cfn)
        if tags.EXEMPT in s.get("Condition", {}).get("ForAllValues:StringEquals", {}).get("aws:TagKeys", [])
        and r == "ButtonsFunctionRole"
    ]
    assert touching == [("ButtonsFunctionRole", "ExemptionGivesWayToKeepForRuns", ["ec2:DeleteTags"])]


def test_the_new_idle_parameters_reach_the_idle_stopper_with_the_codes_defaults(
    sam_template: dict[str, Any], cfn: dict[str, Any]
) -> None:
    params, policy = sam_template["Parameters"], IdlePolicy()
    assert params["CertainIdleMinutes"]["Default"] == policy.certain_idle_minutes
    assert params["ShortestStopMinutes"]["Default"] == policy.shortest_stop_minutes
    assert params["LearnedStarts"]["Default"] == str(policy.learned_starts).lower()
    assert params["PersonHourUsd"]["Default"] == policy.person_hour_usd
    env = functions(cfn)["IdleStopperFunction"]["Environment"]["Variables"]
    assert env["PERSON_HOUR_USD"] == {"Ref": "PersonHourUsd"}  # what a start before a person's day is worth
    assert env["CERTAIN_IDLE_MINUTES"] == {"Ref": "CertainIdleMinutes"}
    assert env["SHORTEST_STOP_MINUTES"] == {"Ref": "ShortestStopMinutes"}
    assert env["LEARNED_STARTS"] == {"Ref": "LearnedStarts"}
    assert env["TEAM_TIMEZONE"] == {"Ref": "TeamTimezone"}  # the team's clock, where recurring work is looked for
    [table] = [s for r, s in statements(cfn) if r == "IdleStopperFunctionRole" and s.get("Sid") == "StateTable"]
    assert "dynamodb:BatchGetItem" in table["Action"]  # the check log, 100 machines a call


def test_only_the_member_digest_roles_may_hand_weeks_to_the_hubs_figures_queue(cfn: dict[str, Any]) -> None:
    resources = cfn["Resources"]
    policy = resources["FiguresQueueMembersPolicy"]
    assert (policy["Condition"], resources["FiguresQueue"]["Condition"]) == ("ByHandHub", "IsOrganizationHub")
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    # each member's digest role by name: not the member accounts, not the organization
    assert statement["Principal"] == {"AWS": {"Fn::Split": [",", {"Ref": "MemberDigestRoles"}]}}
    assert statement["Action"] == "sqs:SendMessage"
    assert "Condition" not in statement
    assert statement["Resource"] == {"Fn::GetAtt": ["FiguresQueue", "Arn"]}
    # a hand-off the hub cannot read ends in the dead-letter queue, whose alarm tells the operator
    redrive = resources["FiguresQueue"]["Properties"]["RedrivePolicy"]
    assert redrive == {"deadLetterTargetArn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}, "maxReceiveCount": 3}
    # the weekly digest may send to exactly the hub's queue (a member) or its own (the hub), and read nothing there
    sends = [
        s for r, s in statements(cfn) if r == "WeeklyDigestFunctionRole" and "sqs:SendMessage" in as_list(s["Action"])
    ]
    dead_letters = {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}
    [handoff] = [s for s in sends if s["Resource"] != dead_letters]  # besides SAM's, for its dead-letter queue
    assert handoff["Action"] == "sqs:SendMessage"
    assert handoff["Resource"] == {
        "Fn::If": ["HandsWeekToHub", {"Ref": "HubFiguresQueueArn"}, {"Fn::GetAtt": ["FiguresQueue", "Arn"]}]
    }
    # the hub's digest reads and deletes on its own queue only, and sends nothing anywhere
    hub = [s for r, s in statements(cfn) if r == "OrganizationDigestFunctionRole"]
    sqs = [s for s in hub if any(a.startswith("sqs:") for a in as_list(s["Action"])) and s["Resource"] != dead_letters]
    assert [(s["Action"], s["Resource"]) for s in sqs] == [
        (["sqs:ReceiveMessage", "sqs:DeleteMessage"], {"Fn::GetAtt": ["FiguresQueue", "Arn"]})
    ]
    assert not any(a.startswith(("ec2:", "cloudwatch:", "ce:")) for s in hub for a in as_list(s["Action"]))
    # A standalone stack (the defaults) has neither, and hands its week to nobody.
    params = cfn["Parameters"]
    assert params["MemberDigestRoles"]["Default"] == params["HubFiguresQueueArn"]["Default"] == ""
    env = functions(cfn)["WeeklyDigestFunction"]["Environment"]["Variables"]
    assert env["HANDOFF_QUEUE_ARN"] == {
        "Fn::If": ["HandsWeekToHub", {"Ref": "HubFiguresQueueArn"},
                   {"Fn::If": ["HubHandsItsOwnWeek", {"Fn::GetAtt": ["FiguresQueue", "Arn"]}, ""]}]
    }  # fmt: skip
    assert cfn["Outputs"]["WeeklyDigestRoleArn"]["Value"] == {"Fn::GetAtt": ["WeeklyDigestFunctionRole", "Arn"]}
    assert cfn["Outputs"]["FiguresQueueArn"]["Value"] == {"Fn::GetAtt": ["FiguresQueue", "Arn"]}


def test_the_organization_digest_runs_after_the_accounts_digests_on_the_same_day(cfn: dict[str, Any]) -> None:
    params = cfn["Parameters"]
    assert params["OrganizationDigestHour"]["Default"] > params["DigestHour"]["Default"]
    [schedule] = [
        r["Properties"] for r in cfn["Resources"].values()
        if r["Type"] == "AWS::Scheduler::Schedule" and "OrganizationDigest" in json.dumps(r["Properties"]["Target"])
    ]  # fmt: skip
    assert schedule["ScheduleExpression"] == {"Fn::Sub": "cron(0 ${OrganizationDigestHour} ? * ${DigestDay} *)"}
    assert schedule["ScheduleExpressionTimezone"] == {"Ref": "TeamTimezone"}
    assert json.loads(schedule["Target"]["Input"]) == load_event("organization_digest/weekly.json")


def test_the_deep_dive_runs_each_quarter_reads_anomalies_of_this_account_only_and_can_be_left_out(
    cfn: dict[str, Any],
) -> None:
    params = cfn["Parameters"]
    # 09:00 on the first Monday (day 2 of EventBridge's week, #1) of January, April, July and October
    assert params["DeepDiveSchedule"]["Default"] == "cron(0 9 ? JAN,APR,JUL,OCT 2#1 *)"
    assert cfn["Conditions"]["HasDeepDive"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "DeepDiveSchedule"}, ""]}]}
    assert cfn["Resources"]["DeepDiveFunction"]["Condition"] == "HasDeepDive"
    role = [s for r, s in statements(cfn) if r == "DeepDiveFunctionRole"]
    [anomalies] = [s for s in role if "ce:GetAnomalies" in as_list(s["Action"])]
    assert anomalies["Resource"] == {"Fn::Sub": "arn:${AWS::Partition}:ce::${AWS::AccountId}:anomalymonitor/*"}
    acts = {a for s in role for a in as_list(s["Action"])}
    assert not any(a.startswith(("ec2:Stop", "ec2:Start", "ec2:CreateTags", "sqs:Receive")) for a in acts)


def test_the_idle_stopper_reads_the_bill_it_prices_stops_with_and_nothing_more(cfn: dict[str, Any]) -> None:
    # The money model (core/money.py, aws/billing.py) and the scarce capacity it weighs (core/scarcity.py):
    # read-only calls, each named in docs/rules.md with the question it answers.
    [read] = [s for r, s in statements(cfn) if r == "IdleStopperFunctionRole" and s.get("Sid") == "ReadTheBill"]
    assert sorted(as_list(read["Action"])) == [
        "ce:GetSavingsPlansCoverage",
        "ce:GetSavingsPlansUtilizationDetails",
        "cloudtrail:LookupEvents",
        "ec2:DescribeCapacityReservations",
        "ec2:DescribeReservedInstances",
        "ec2:DescribeSpotPriceHistory",
        "savingsplans:DescribeSavingsPlans",
    ]
    assert read["Effect"] == "Allow"


def test_the_weekly_digest_reads_the_bill_its_idle_hours_are_priced_on_and_writes_none_of_it(
    cfn: dict[str, Any],
) -> None:
    # The digest prices idle hours as the idle stopper prices stops (core/money.py, aws/billing.py): the same
    # read-only calls as the stopper's ReadTheBill, less CloudTrail (the digest weighs no scarce capacity).
    [read] = [s for r, s in statements(cfn) if r == "WeeklyDigestFunctionRole" and s.get("Sid") == "ReadTheWeek"]
    bill = {
        "ec2:DescribeReservedInstances",
        "ec2:DescribeCapacityReservations",
        "ec2:DescribeSpotPriceHistory",
        "savingsplans:DescribeSavingsPlans",
        "ce:GetSavingsPlansUtilizationDetails",
        "ce:GetSavingsPlansCoverage",
    }
    assert bill <= set(as_list(read["Action"]))
    role = {a for r, s in statements(cfn) if r == "WeeklyDigestFunctionRole" for a in as_list(s["Action"])}
    assert not any(a.startswith(("ec2:Purchase", "ec2:Modify", "ec2:Cancel", "savingsplans:Create")) for a in role)
    assert not any("*" in a for a in role)


def test_the_click_worker_may_read_a_decisions_trail_back_from_the_state_table(cfn: dict[str, Any]) -> None:
    """*Why?* queries one day's ledger partition for the decision's entries (Ledger.decided)."""
    [table] = [s for r, s in statements(cfn) if r == "ButtonsFunctionRole" and s.get("Sid") == "StateTable"]
    assert "dynamodb:Query" in as_list(table["Action"])
    assert table["Resource"] == {"Fn::GetAtt": ["StateTable", "Arn"]}
