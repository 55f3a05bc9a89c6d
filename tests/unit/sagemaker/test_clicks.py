"""A click on a SageMaker button: what it names, and what it refuses."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from costguard.core.errors import EventValidationError
from costguard.slack.buttons import Button, sagemaker_keep_buttons
from costguard.slack.interactions import Click, parse_interaction
from testing.handlers import load_event


def interaction(value: str, button: str = "costguard.keep_tomorrow") -> str:
    payload = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"][0].update(action_id=button, value=value)
    return urlencode({"payload": json.dumps(payload)})


def test_a_click_on_a_sagemaker_button_names_the_resource_and_survives_the_queue() -> None:
    [keep, *_] = sagemaker_keep_buttons(
        "app", "d-abc123def456/space.team/JupyterLab/default", "eu-west-1", "111122223333"
    )
    click = parse_interaction(interaction(keep["value"], keep["action_id"]))
    assert click is not None
    assert (click.kind, click.instance_id, click.region, click.account) == (
        "app", "d-abc123def456/space.team/JupyterLab/default", "eu-west-1", "111122223333"
    )  # fmt: skip
    assert click.button is Button.KEEP_2H
    assert Click.from_json(click.to_json()) == click


def test_an_ec2_click_reads_as_before_and_a_forged_sagemaker_name_is_refused() -> None:
    ec2 = parse_interaction(interaction(json.dumps({"i": "i-0123456789abcdef0", "r": "us-east-1"})))
    assert ec2 is not None
    assert (ec2.kind, ec2.instance_id, ec2.sagemaker) == ("instance", "i-0123456789abcdef0", False)
    for forged in (
        {"k": "notebook", "n": "x/../../etc", "r": "us-east-1"},
        {"k": "cluster", "n": "a", "r": "us-east-1"},
    ):
        with pytest.raises(EventValidationError):
            parse_interaction(interaction(json.dumps(forged)))
