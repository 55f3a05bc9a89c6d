"""The Lambda environment the tests, the demo and the benchmarks run with is read from template.yaml
(testing.template.lambda_environment), as `sam deploy` would set it, not written out by hand."""

from __future__ import annotations

import pytest

from testing.template import lambda_environment, template

DEMO = {"AlertsChannel": "#ml-costs"}  # the one parameter without a default


def test_a_functions_environment_is_the_globals_and_its_own_variables_at_the_templates_defaults() -> None:
    env = lambda_environment("idle_stopper", DEMO)
    tmpl = template()
    declared = {
        *tmpl["Globals"]["Function"]["Environment"]["Variables"],
        *tmpl["Resources"]["IdleStopperFunction"]["Properties"]["Environment"]["Variables"],
    }
    # Left out: the variables that name a resource not given (the state table, the activity check's document).
    assert set(env) == declared - {"STATE_TABLE", "ACTIVITY_CHECK_DOCUMENT"}
    assert env["IDLE_WINDOW_MINUTES"] == str(tmpl["Parameters"]["IdleWindowMinutes"]["Default"])
    assert env["COSTGUARD_MODE"] == tmpl["Parameters"]["Mode"]["Default"]
    assert env["POWERTOOLS_TRACE_DISABLED"] == "false"  # Tracing defaults to Active


def test_parameters_and_resources_given_replace_the_defaults_and_conditions_follow_them() -> None:
    resources = {"StateTable": "costguard-state", "ActivityCheckDocument": "costguard-activity-check"}
    env = lambda_environment(
        "weekly_digest", {**DEMO, "Mode": "enforce", "Tracing": "Disabled", "HubFiguresQueueArn": "arn:q"}, resources
    )
    assert (env["COSTGUARD_MODE"], env["POWERTOOLS_TRACE_DISABLED"]) == ("enforce", "true")
    assert env["STATE_TABLE"] == "costguard-state"
    assert env["HANDOFF_QUEUE_ARN"] == "arn:q"  # !If HandsWeekToHub: a hub's queue was given
    assert env["ACTIVITY_CHECK_DOCUMENT"] == "costguard-activity-check"  # !If HasActivityCheck
    off = lambda_environment("weekly_digest", {**DEMO, "ActivityCheck": "false"}, resources)
    assert off["ACTIVITY_CHECK_DOCUMENT"] == ""


def test_a_parameter_without_a_default_must_be_given() -> None:
    with pytest.raises(KeyError, match="AlertsChannel"):
        lambda_environment("budget_alerts")
    with pytest.raises(KeyError, match="no function"):
        lambda_environment("no_such_function", DEMO)
