"""`make first-deploy` asks for DefaultHostManagement and recommends it: Enter turns it on, and the reason is said."""

from __future__ import annotations

from pathlib import Path

from scripts.first_deploy import RECOMMENDED, ask, first_parameters
from testing.template import template

ROOT = Path(__file__).resolve().parents[2]


def test_a_first_deploy_asks_for_default_host_management_and_enter_turns_it_on() -> None:
    first = first_parameters((ROOT / "samconfig.toml").read_text())
    assert first["DefaultHostManagement"] == "true"
    assert template()["Parameters"]["DefaultHostManagement"]["Default"] == "false"  # an update changes nothing
    told: list[str] = []
    asked: list[str] = []

    def enter(prompt: str) -> str:
        asked.append(prompt)
        return ""

    answers = ask(
        template()["Parameters"], {"DefaultHostManagement": first["DefaultHostManagement"]}, enter, told.append
    )

    assert answers == {"DefaultHostManagement": "true"}
    assert asked == ["DefaultHostManagement [true]: "]
    assert told[0].startswith('\nDefaultHostManagement: "true" (recommended): turn on Systems Manager\'s Default')
    assert told[1] == f"  recommended: true ({RECOMMENDED['DefaultHostManagement'][1]})"


def test_a_person_may_say_no_and_a_wrong_answer_is_asked_again() -> None:
    told: list[str] = []
    answers = iter(["yes", "false"])

    chosen = ask(template()["Parameters"], {"DefaultHostManagement": "true"}, lambda _: next(answers), told.append)

    assert chosen == {"DefaultHostManagement": "false"}
    assert "  not taken: one of true, false" in told
