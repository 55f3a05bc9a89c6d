"""`make first-deploy`: asks for the few parameters a first deploy sets, the ones samconfig.toml's default environment
lists, each with the template's description and its constraints, and writes the answers back there; `make
first-deploy` then runs `sam build` and `sam deploy`, which asks nothing but to confirm the change set.

`sam deploy --guided` cannot do this: SAM CLI prompts for every parameter of the template, whatever samconfig.toml
holds (its values only become the defaults shown). Everything else keeps the template's default
(docs/configuration.md); a later `sam deploy` keeps what samconfig.toml holds.
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from samtranslator.yaml_helper import yaml_parse

ROOT = Path(__file__).resolve().parents[1]
SECTION = "[default.deploy.parameters]"
OVERRIDES = re.compile(r"^parameter_overrides\s*=.*$", re.MULTILINE)
# The answers a first deploy recommends, and why (said under the question; Enter takes samconfig.toml's value).
RECOMMENDED = {
    "DefaultHostManagement": (
        "true",
        "without it, a machine with no instance profile for Systems Manager never answers the activity check, "
        "and costguard cannot see its crontab, timers or sessions",
    ),
}


def first_parameters(samconfig: str) -> dict[str, str]:
    """The default environment's parameter_overrides, in order, read as SAM CLI reads `Key="value"` pairs."""
    raw = tomllib.loads(samconfig).get("default", {}).get("deploy", {}).get("parameters", {})
    pairs = [word.partition("=") for word in shlex.split(raw.get("parameter_overrides", ""))]
    return {key: value for key, _, value in pairs}


def refusal(spec: Mapping[str, Any], value: str) -> str | None:
    """Why CloudFormation would refuse this value for the parameter, or None."""
    if '"' in value or "\\" in value:
        return 'a value with " or \\ cannot be written to samconfig.toml'
    if "AllowedValues" in spec and value not in [str(v) for v in spec["AllowedValues"]]:
        return f"one of {', '.join(str(v) for v in spec['AllowedValues'])}"
    if "AllowedPattern" in spec and not re.fullmatch(spec["AllowedPattern"], value):
        return f"it must match {spec['AllowedPattern']}"
    if len(value) < spec.get("MinLength", 0):
        return "it cannot be empty" if spec.get("MinLength") == 1 else f"at least {spec['MinLength']} characters"
    if len(value) > spec.get("MaxLength", len(value)):
        return f"at most {spec['MaxLength']} characters"
    if spec.get("Type") == "Number":
        try:
            number = float(value)
        except ValueError:
            return "a number"
        if not spec.get("MinValue", number) <= number <= spec.get("MaxValue", number):
            return f"between {spec.get('MinValue')} and {spec.get('MaxValue')}"
    return None


def ask(
    parameters: Mapping[str, Mapping[str, Any]],
    current: Mapping[str, str],
    read: Callable[[str], str],
    say: Callable[[str], None],
) -> dict[str, str]:
    """Each parameter in turn: its description, then the answer (Enter keeps the value shown), asked again until
    CloudFormation would take it."""
    answers: dict[str, str] = {}
    for name, value in current.items():
        spec = parameters[name]
        shown = value or str(spec.get("Default", ""))
        say(f"\n{name}: {' '.join(str(spec.get('Description', '')).split())}")
        if name in RECOMMENDED:
            say(f"  recommended: {RECOMMENDED[name][0]} ({RECOMMENDED[name][1]})")
        while True:
            answer = read(f"{name} [{shown}]: ").strip() or shown
            why = refusal(spec, answer)
            if why is None:
                answers[name] = answer
                break
            say(f"  not taken: {why}")
    return answers


def written(samconfig: str, answers: Mapping[str, str]) -> str:
    """samconfig.toml with the default environment's parameter_overrides replaced, and nothing else changed."""
    start = samconfig.index(SECTION)
    end = samconfig.find("\n[", start + len(SECTION))
    end = len(samconfig) if end < 0 else end
    pairs = " ".join(f'{name}=\\"{value}\\"' for name, value in answers.items())
    section, count = OVERRIDES.subn(lambda _: f'parameter_overrides = "{pairs}"', samconfig[start:end], count=1)
    if count != 1:
        raise ValueError(f"{SECTION} has no parameter_overrides line to write the answers to")
    return samconfig[:start] + section + samconfig[end:]


def main(read: Callable[[str], str] = input, say: Callable[[str], None] = print, root: Path = ROOT) -> int:
    config = root / "samconfig.toml"
    text = config.read_text()
    parameters = yaml_parse((root / "template.yaml").read_text())["Parameters"]
    current = first_parameters(text)
    unknown = sorted(set(current) - set(parameters))
    if unknown:
        say(f"samconfig.toml names parameters template.yaml does not have: {', '.join(unknown)}")
        return 2
    say(f"costguard's first deploy: {len(current)} questions (the rest keep their defaults: docs/configuration.md)")
    answers = ask(parameters, current, read, say)
    config.write_text(written(text, answers))
    say("\nWritten to samconfig.toml ([default.deploy.parameters]). Next: sam build, then sam deploy.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
