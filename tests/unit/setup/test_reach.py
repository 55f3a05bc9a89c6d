"""Why a GPU machine does not answer the activity check, and its fix, from what Systems Manager and EC2 say of it."""

from __future__ import annotations

from datetime import UTC, datetime

from costguard.core.records import Instance
from costguard.setup.reach import Unanswered, grouped, reach_lines, unanswered

BOX = Instance("i-0abc1234def567890", "us-east-1", "g5.xlarge", "running", datetime(2026, 11, 20, tzinfo=UTC))


def box(n: int) -> Instance:
    return Instance(f"i-{n:017x}", "us-east-1", "g5.xlarge", "running", datetime(2026, 11, 20, tzinfo=UTC))


def test_a_machine_systems_manager_has_online_answers() -> None:
    assert unanswered(BOX, "Online", host_management=False) is None


def test_an_agent_that_stopped_reporting_is_told_to_restart_and_check_its_route() -> None:
    found = unanswered(BOX, "ConnectionLost", host_management=True)

    assert found == Unanswered(
        BOX.instance_id,
        "the SSM agent stopped reporting (ConnectionLost)",
        "restart the agent (`sudo systemctl restart amazon-ssm-agent`) and check the machine has a route to "
        "Systems Manager (VPC endpoints ssm, ssmmessages and ec2messages, or a NAT gateway)",
    )


def test_a_machine_unlisted_without_default_host_management_is_told_the_parameter() -> None:
    found = unanswered(BOX, None, host_management=False)

    assert found is not None
    assert "no instance profile" in found.why
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
    assert found.why.startswith("Systems Manager does not list them: no SSM agent 3.2.582 or later running")
    assert "IMDSv1 only" in found.why
    assert "AWS-UpdateSSMAgent" in found.fix


def test_with_the_check_off_every_machine_is_said_to_be_unasked() -> None:
    found = unanswered(BOX, "Online", host_management=True, check_on=False)

    assert found == Unanswered(BOX.instance_id, "the activity check is off (ActivityCheck=false)", "ActivityCheck=true")


def test_a_machine_unlisted_where_the_setting_was_not_read_is_told_both_fixes() -> None:
    found = unanswered(BOX, None, host_management=None)

    assert found is not None
    assert "was not read" in found.why
    assert found.fix.startswith("DefaultHostManagement=true or an instance profile")
    assert "SSM agent 3.2.582 or later" in found.fix


def test_machines_that_share_a_reason_and_fix_are_one_group_the_largest_first() -> None:
    unmanaged = [unanswered(box(n), None, host_management=False) for n in (4, 2, 3)]
    lost = unanswered(box(9), "ConnectionLost", host_management=False)

    groups = grouped([u for u in [lost, *unmanaged] if u is not None])

    assert [(len(g.instance_ids), g.why[:40]) for g in groups] == [
        (3, "Systems Manager does not manage them (no"),
        (1, "the SSM agent stopped reporting (Connect"),
    ]
    assert groups[0].instance_ids == (box(2).instance_id, box(3).instance_id, box(4).instance_id)


def test_several_machines_with_the_metadata_service_off_share_one_command_naming_any_instance() -> None:
    off = [unanswered(box(n), None, metadata_endpoint="disabled", host_management=True) for n in (1, 2)]
    alone = unanswered(box(3), None, metadata_endpoint="disabled", host_management=True)

    [group] = grouped([u for u in off if u is not None])
    [single] = grouped([alone] if alone else [])

    assert "--instance-id <instance-id> --http-endpoint enabled" in group.fix
    assert f"--instance-id {box(3).instance_id} --http-endpoint enabled" in single.fix


def test_the_lines_name_a_few_machines_per_reason_with_its_fix_and_count_the_rest() -> None:
    unmanaged = [unanswered(box(n), None, host_management=False) for n in range(4)]
    found = [u for u in unmanaged if u is not None]
    found += [Unanswered(box(10 + n).instance_id, f"reason {n}", f"fix {n}") for n in range(4)]

    lines = reach_lines(found)

    assert len(lines) == 4  # three reasons, and the machines of the others counted
    assert lines[0] == (
        "4 machines judged on metrics alone (`i-00000000000000000`, `i-00000000000000001`, `i-00000000000000002` "
        "and 1 more): Systems Manager does not manage them (no instance profile, Default Host Management off). "
        "*Fix*: DefaultHostManagement=true, or an instance profile with AmazonSSMManagedInstanceCore"
    )
    assert lines[1].startswith("1 machine judged on metrics alone (`i-0000000000000000a`): reason 0. *Fix*: fix 0")
    assert lines[3] == "and 2 more machines the activity check cannot reach, for other reasons"


def test_a_command_naming_any_instance_and_an_agents_status_reach_slack_escaped() -> None:
    off = [unanswered(box(n), None, metadata_endpoint="disabled", host_management=True) for n in (1, 2)]
    odd = unanswered(box(5), "<!channel>", host_management=True)

    text = "\n".join(reach_lines([u for u in [*off, odd] if u is not None]))

    assert "--instance-id &lt;instance-id&gt;" in text
    assert "<!channel>" not in text
    assert "(&lt;!channel&gt;)" in text


def test_no_machine_unreached_is_no_line() -> None:
    assert reach_lines([]) == []
