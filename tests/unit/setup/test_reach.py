"""Why a GPU machine does not answer the activity check, and its fix, from what Systems Manager and EC2 say of it."""

from __future__ import annotations

from datetime import UTC, datetime

from costguard.core.records import Instance
from costguard.setup.reach import Unanswered, unanswered

BOX = Instance("i-0abc1234def567890", "us-east-1", "g5.xlarge", "running", datetime(2026, 11, 20, tzinfo=UTC))


def test_a_machine_systems_manager_has_online_answers() -> None:
    assert unanswered(BOX, "Online", host_management=False) is None


def test_an_agent_that_stopped_reporting_is_told_to_restart_and_check_its_route() -> None:
    found = unanswered(BOX, "ConnectionLost", host_management=True)

    assert found == Unanswered(
        BOX.instance_id,
        "its SSM agent stopped reporting (ConnectionLost)",
        "restart the agent on it (`sudo systemctl restart amazon-ssm-agent`) and check it has a route to Systems "
        "Manager (VPC endpoints ssm, ssmmessages and ec2messages, or a NAT gateway)",
    )


def test_a_machine_unlisted_without_default_host_management_is_told_the_parameter() -> None:
    found = unanswered(BOX, None, host_management=False)

    assert found is not None
    assert "no instance profile with AmazonSSMManagedInstanceCore" in found.why
    assert found.fix.startswith("DefaultHostManagement=true")


def test_a_machine_whose_metadata_service_is_off_gets_the_command_that_turns_it_on_with_imdsv2() -> None:
    found = unanswered(BOX, None, metadata_endpoint="disabled", host_management=True)

    assert found is not None
    assert found.fix == (
        "`aws ec2 modify-instance-metadata-options --instance-id i-0abc1234def567890 --http-endpoint enabled "
        "--http-tokens required`"
    )


def test_a_machine_unlisted_with_default_host_management_on_needs_a_recent_agent_or_a_route() -> None:
    found = unanswered(BOX, None, host_management=True)

    assert found is not None
    assert found.why.startswith("Systems Manager does not list it: no SSM agent 3.2.582 or later running")
    assert "IMDSv1 only" in found.why
    assert "AWS-UpdateSSMAgent" in found.fix


def test_with_the_check_off_every_machine_is_said_to_be_unasked() -> None:
    found = unanswered(BOX, "Online", host_management=True, check_on=False)

    assert found == Unanswered(BOX.instance_id, "the activity check is off (ActivityCheck=false)", "ActivityCheck=true")
