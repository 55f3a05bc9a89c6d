"""`make first-deploy` (scripts/first_deploy.py): a first deploy asks only the few parameters samconfig.toml's default
environment lists, each with the template's description and constraints, and writes the answers there alone."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from scripts.first_deploy import ask, first_parameters, main, refusal, written
from testing.template import template

ROOT = Path(__file__).resolve().parents[2]
SAMCONFIG = (ROOT / "samconfig.toml").read_text()


def test_the_default_environment_names_the_few_a_first_deploy_sets_and_every_other_has_a_default() -> None:
    parameters = template()["Parameters"]
    first = first_parameters(SAMCONFIG)

    assert set(first) <= set(parameters)
    assert {name for name, spec in parameters.items() if "Default" not in spec} <= set(first)
    assert len(first) <= 8 < len(parameters), "a first deploy asks a handful, not the whole template"
    assert {"AlertsChannel", "SlackSecretName", "Mode", "TeamTimezone"} <= set(first)
    assert first["Mode"] == "dry-run", "a first deploy changes nothing on the fleet"


class Person:
    """Answers the questions in turn, and keeps what was said."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []
        self.told: list[str] = []

    def read(self, prompt: str) -> str:
        self.asked.append(prompt)
        return self.answers.pop(0)


def test_each_parameter_is_asked_in_turn_enter_keeps_the_value_and_a_refused_answer_is_asked_again() -> None:
    parameters = template()["Parameters"]
    person = Person("", "#ml-costs", "enforced", "notify-only")

    answers = ask(
        parameters,
        {"SlackSecretName": "costguard/slack", "AlertsChannel": "", "Mode": "dry-run"},
        person.read,
        person.told.append,
    )

    assert answers == {"SlackSecretName": "costguard/slack", "AlertsChannel": "#ml-costs", "Mode": "notify-only"}
    assert person.asked == [
        "SlackSecretName [costguard/slack]: ",
        "AlertsChannel []: ",
        "Mode [dry-run]: ",
        "Mode [dry-run]: ",
    ]
    assert "  not taken: one of enforce, notify-only, dry-run" in person.told
    assert any(line.startswith("\nAlertsChannel: Channel (ID like C0123ABC or #name)") for line in person.told)


def test_an_empty_required_answer_a_quote_or_a_number_out_of_range_is_refused() -> None:
    parameters = template()["Parameters"]

    assert refusal(parameters["AlertsChannel"], "") == "it cannot be empty"
    assert refusal(parameters["AlertsChannel"], '#a"b') is not None
    assert refusal(parameters["IdleWindowMinutes"], "10") == "between 30 and 1440"
    assert refusal(parameters["IdleWindowMinutes"], "two hours") == "a number"
    assert refusal(parameters["TeamTimezone"], "Europe/Paris") is None


def test_the_answers_replace_the_default_environments_overrides_and_nothing_else() -> None:
    answers = {"AlertsChannel": "C0123ABCD", "Mode": "dry-run", "OpsEmail": "ops@example.com"}

    after = written(SAMCONFIG, answers)

    assert first_parameters(after) == answers
    before, now = tomllib.loads(SAMCONFIG), tomllib.loads(after)
    assert now["hub"] == before["hub"]
    assert now["member"] == before["member"]
    changed = [line for line in after.splitlines() if line not in SAMCONFIG.splitlines()]
    assert changed == [
        'parameter_overrides = "AlertsChannel=\\"C0123ABCD\\" Mode=\\"dry-run\\" OpsEmail=\\"ops@example.com\\""'
    ]


def test_make_first_deploy_writes_the_answers_to_samconfig(tmp_path: Path) -> None:
    for name in ("samconfig.toml", "template.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    asked = first_parameters(SAMCONFIG)
    person = Person(*["" for _ in asked])
    person.answers[list(asked).index("AlertsChannel")] = "C0123ABCD"

    assert main(person.read, person.told.append, tmp_path) == 0

    saved = first_parameters((tmp_path / "samconfig.toml").read_text())
    assert list(saved) == list(asked)
    assert saved["AlertsChannel"] == "C0123ABCD"
    assert saved["Mode"] == "dry-run"
    assert len(person.asked) == len(asked)
