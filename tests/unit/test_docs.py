"""The documentation holds together: links resolve, examples parse, and the configuration page, the
samconfig environments and the template name the same parameters."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testing.template import template

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
PARSERS: dict[str, Any] = {
    "json": json.loads,
    "yaml": yaml.safe_load,
    "yml": yaml.safe_load,
    "toml": tomllib.loads,
}


def _prose(text: str) -> str:
    """The page without its code: links and headings inside code blocks and spans are not links."""
    text = FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in FENCE.sub("", page.read_text()).splitlines():
        if match := re.match(r"^#{1,6} +(.+?) *#*$", line):
            slug = github_anchor(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")  # GitHub numbers repeated headings
    return found


def links(page: Path) -> Iterator[str]:
    for match in re.finditer(r"\[[^\]]*\]\(([^)\s]+)\)", _prose(page.read_text())):
        target = match.group(1)
        if not re.match(r"^[a-z]+:", target):  # https:, mailto: are not checked offline
            yield target


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target}: no heading #{fragment} in {resolved.name}")
    return broken


def unparsable_blocks(text: str) -> list[str]:
    """Every fenced block in a language we can parse that does not parse, with its line."""
    errors = []
    for match in FENCE.finditer(text):
        parse = PARSERS.get(match.group(1).lower())
        if parse is None:
            continue
        line = text.count("\n", 0, match.start()) + 1
        try:
            parse(match.group(2))
        except Exception as exc:  # each parser has its own error type
            errors.append(f"line {line} ({match.group(1)}): {exc}")
    return errors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A section, with `code`\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md) [ok](other.md#a-section-with-code) [ok](#here) [web](https://example.com/x)\n"
        "[gone](missing.md) [no anchor](other.md#nowhere)\n\n## Here\n\n```\n[in code](ignored.md)\n```\n"
    )

    assert broken_links(page) == ["missing.md: no such file", "other.md#nowhere: no heading #nowhere in other.md"]


def test_readme_fits_on_a_page_with_the_two_commands_at_the_top() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()

    assert len(lines) <= 150
    top = "\n".join(lines[:60])
    assert "make demo" in top
    assert "make test" in top


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_json_yaml_and_toml_block_parses(page: Path) -> None:
    assert unparsable_blocks(page.read_text()) == []


def test_the_configuration_files_the_docs_link_parse() -> None:
    files = [*DOCS.glob("*.json"), *DOCS.glob("*.yaml"), ROOT / "slack-app-manifest.yaml"]

    for path in files:
        parsed = PARSERS[path.suffix.lstrip(".")](path.read_text())
        assert isinstance(parsed, dict), path
    assert DOCS / "cloudwatch-agent.json" in files


def test_a_block_that_does_not_parse_is_found() -> None:
    text = 'Intro\n\n```json\n{"a": 1,}\n```\n\n```yaml\nkey: [1, 2\n```\n\n```bash\nnot { parsed\n```\n'

    errors = unparsable_blocks(text)

    assert [e.split(" (")[0] for e in errors] == ["line 3", "line 7"]


def parameter_rows() -> dict[str, str]:
    """Each row of docs/configuration.md's tables: the one parameter it names, and its default cell."""
    rows: dict[str, str] = {}
    for line in (DOCS / "configuration.md").read_text().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        names = re.findall(r"`([A-Za-z0-9]+)`", cells[0])
        assert len(names) == 1, f"one parameter a row: {line}"
        assert names[0] not in rows, f"{names[0]} is documented twice"
        rows[names[0]] = cells[1]
    return rows


def test_every_template_parameter_is_on_the_configuration_page_and_no_other() -> None:
    documented = set(parameter_rows())
    parameters = set(template()["Parameters"])

    assert sorted(parameters - documented) == [], "parameters missing from docs/configuration.md"
    assert sorted(documented - parameters) == [], "documented parameters the template does not have"


def test_the_configuration_page_gives_each_parameter_its_template_default() -> None:
    parameters = template()["Parameters"]

    for name, cell in parameter_rows().items():
        default = parameters[name].get("Default")
        literal = re.search(r"`([^`]*)`", cell)
        if literal:  # a value: the template's own
            assert str(default) == literal.group(1), f"{name}: the page says {cell}, the template {default!r}"
        else:  # a phrase ("(empty)", "the deploy region", "(required)"): no default, or an empty one
            assert default in (None, ""), f"{name}: the page says {cell}, the template {default!r}"


def samconfig_overrides() -> dict[str, dict[str, str]]:
    """Each samconfig.toml environment's parameter_overrides, read as SAM CLI reads `Key="value"` pairs."""
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    out = {}
    for env, commands in config.items():
        if not isinstance(commands, dict) or "deploy" not in commands:
            continue
        raw = commands["deploy"].get("parameters", {}).get("parameter_overrides", "")
        pairs = [word.partition("=") for word in shlex.split(raw)]
        out[env] = {key: value for key, _, value in pairs}
    return out


def _refusal(spec: dict[str, Any], value: str) -> str | None:
    """Why CloudFormation would refuse this value for the parameter, or None."""
    if "AllowedValues" in spec and value not in [str(v) for v in spec["AllowedValues"]]:
        return f"not one of {spec['AllowedValues']}"
    if "AllowedPattern" in spec and not re.fullmatch(spec["AllowedPattern"], value):
        return f"does not match {spec['AllowedPattern']}"
    if len(value) < spec.get("MinLength", 0) or len(value) > spec.get("MaxLength", len(value)):
        return "has the wrong length"
    if spec.get("Type") == "Number":
        number = float(value)
        if number < spec.get("MinValue", number) or number > spec.get("MaxValue", number):
            return "is out of range"
    return None


def test_samconfig_ships_the_environments_the_several_accounts_guide_uses() -> None:
    overrides = samconfig_overrides()

    assert {"default", "hub", "member"} <= set(overrides)
    assert "HubReceiverRoleArn" in overrides["member"]
    assert overrides["member"]["BudgetAlerts"] == "false"
    guide = (DOCS / "deploying.md").read_text()
    assert "`hub`" in guide
    assert "`member`" in guide


def test_every_samconfig_override_is_a_template_parameter_with_a_value_it_accepts() -> None:
    parameters = template()["Parameters"]

    for env, values in samconfig_overrides().items():
        assert values, f"{env}: no parameter_overrides"
        for name, value in values.items():
            assert name in parameters, f"{env}: {name} is not a template parameter"
            assert _refusal(parameters[name], value) is None, (
                f"{env}: {name}={value!r} {_refusal(parameters[name], value)}"
            )
        if env != "default":  # `sam deploy --guided` asks the default environment for the rest
            required = {name for name, spec in parameters.items() if "Default" not in spec}
            assert required <= set(values), f"{env}: no value for {sorted(required - set(values))}"
