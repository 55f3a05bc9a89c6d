from __future__ import annotations

import pytest

from costguard.core.errors import ConfigError
from costguard.core.settings import Mode, Settings

BASE = {
    "SLACK_SECRET_NAME": "costguard/slack",
    "ALERTS_CHANNEL": "C0ALERTS",
    "STATE_TABLE": "state",
    "AWS_REGION": "eu-west-1",
}


def test_defaults_govern_the_deploy_region_in_dry_run() -> None:
    settings = Settings.from_env(BASE)
    assert settings.governed_regions == ("eu-west-1",)
    assert settings.mode is Mode.DRY_RUN
    assert settings.owner_tag_key == "Owner"
    assert settings.digest_channel == "C0ALERTS"


def test_regions_and_mode_are_parsed() -> None:
    env = {**BASE, "GOVERNED_REGIONS": "us-east-1, us-west-2,", "COSTGUARD_MODE": "enforce", "EMAIL_DOMAIN": "@x.io"}
    settings = Settings.from_env(env)
    assert settings.governed_regions == ("us-east-1", "us-west-2")
    assert settings.mode is Mode.ENFORCE
    assert settings.email_domain == "x.io"


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"COSTGUARD_MODE": "yolo"})
    message = str(raised.value)
    for expected in ("SLACK_SECRET_NAME", "ALERTS_CHANNEL", "STATE_TABLE", "COSTGUARD_MODE='yolo'", "AWS_REGION"):
        assert expected in message


def test_dry_run_is_the_only_mode_that_does_not_mutate() -> None:
    assert [m for m in Mode if not m.mutates] == [Mode.DRY_RUN]
