from __future__ import annotations

from typing import Any

import pytest

from costguard.core.errors import ConfigError
from costguard.core.settings import (
    ButtonSettings,
    DeepDiveSettings,
    DigestSettings,
    IdlePolicy,
    Mode,
    OwnerSettings,
    SageMakerPolicy,
    Settings,
)

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


@pytest.mark.parametrize("window", ["30", "45"])
def test_an_idle_window_no_longer_than_the_shorter_wait_turns_the_shorter_wait_off(window: str) -> None:
    # IdleWindowMinutes may be 30 to 1,440 and CertainIdleMinutes defaults to 45: a team that shortens its
    # window must get a working idle stopper that waits its window, not a configuration error on every sweep.
    policy = IdlePolicy.from_env({"IDLE_WINDOW_MINUTES": window})

    assert policy.window_minutes == int(window)
    assert policy.certain_idle_minutes == 0


def test_a_shorter_wait_under_a_quarter_of_an_hour_is_refused_by_its_parameter_name() -> None:
    with pytest.raises(ConfigError) as raised:
        IdlePolicy.from_env({"CERTAIN_IDLE_MINUTES": "10"})

    assert "CertainIdleMinutes" in str(raised.value)
    assert "at least 15" in str(raised.value)


def test_a_shorter_wait_within_the_window_is_kept() -> None:
    assert IdlePolicy.from_env({"IDLE_WINDOW_MINUTES": "120", "CERTAIN_IDLE_MINUTES": "60"}).certain_idle_minutes == 60


@pytest.mark.parametrize("settings_class", [IdlePolicy, SageMakerPolicy, ButtonSettings, OwnerSettings])
def test_accelerator_families_mean_the_same_to_every_function_that_reads_them(settings_class: Any) -> None:
    env = {"ACCELERATOR_FAMILIES": "g5, p4d*", "CLICK_QUEUE_URL": "https://sqs"}
    assert settings_class.from_env(env).accelerator_families == ("g5*", "p4d*")
    assert settings_class.from_env({}).accelerator_families == ("p*", "g*", "trn*", "inf*", "dl*")


def test_the_buttons_govern_the_same_ec2_and_sagemaker_types_as_the_stoppers() -> None:
    env = {"ACCELERATOR_FAMILIES": "g5"}
    buttons, idle, sagemaker = ButtonSettings.from_env(env), IdlePolicy.from_env(env), SageMakerPolicy.from_env(env)
    for instance_type in ("g5.xlarge", "g6.xlarge", "ml.g5.xlarge", "ml.g6.xlarge", "ml.t3.medium"):
        assert buttons.is_accelerated(instance_type) == idle.is_accelerated(instance_type)
        assert buttons.is_accelerated_ml(instance_type) == sagemaker.is_accelerated(instance_type)


@pytest.mark.parametrize("settings_class", [IdlePolicy, ButtonSettings])
def test_a_team_timezone_that_is_not_an_iana_zone_is_refused_once_with_its_name(settings_class: Any) -> None:
    with pytest.raises(ConfigError) as refused:
        settings_class.from_env({"TEAM_TIMEZONE": "Mars/Olympus"})
    assert str(refused.value).count("TEAM_TIMEZONE='Mars/Olympus' is not an IANA time zone") == 1


@pytest.mark.parametrize("settings_class", [DigestSettings, DeepDiveSettings])
def test_the_team_tag_key_defaults_to_team_for_both_digests(settings_class: Any) -> None:
    assert settings_class.from_env({}).team_tag_key == "Team"
    assert settings_class.from_env({"TEAM_TAG_KEY": "CostCenter"}).team_tag_key == "CostCenter"


def test_the_ledger_keeps_its_records_four_hundred_days_whatever_the_environment_says() -> None:
    assert Settings.from_env({**BASE, "STATE_TTL_DAYS": "3"}).state_ttl_days == 400


def test_a_persons_hour_is_read_and_a_negative_or_unreadable_one_is_refused_by_its_name() -> None:
    assert IdlePolicy.from_env({}).person_hour_usd == 150.0
    assert IdlePolicy.from_env({"PERSON_HOUR_USD": "0"}).person_hour_usd == 0.0  # no start for a person's day
    for bad in ("-1", "lots"):
        with pytest.raises(ConfigError) as raised:
            IdlePolicy.from_env({"PERSON_HOUR_USD": bad})
        assert "PERSON_HOUR_USD" in str(raised.value)
