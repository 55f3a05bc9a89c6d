"""The documentation holds together: links resolve, examples parse, and the configuration page, the
samconfig environments and the template name the same parameters."""

from __future__ import annotations

import fnmatch
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
            if env == "default" and value == "" and "Default" not in parameters[name]:
                continue  # left for `make first-deploy` to ask (scripts/first_deploy.py)
            assert _refusal(parameters[name], value) is None, (
                f"{env}: {name}={value!r} {_refusal(parameters[name], value)}"
            )
        if env != "default":  # `make first-deploy` asks the default environment's
            required = {name for name, spec in parameters.items() if "Default" not in spec}
            assert required <= set(values), f"{env}: no value for {sorted(required - set(values))}"


def _statements(policy: Any) -> Iterator[dict[str, Any]]:
    """Every statement of a policy, both branches of each `!If` included."""
    if isinstance(policy, list):
        for item in policy:
            yield from _statements(item)
    elif isinstance(policy, dict):
        if "Fn::If" in policy:
            for branch in policy["Fn::If"][1:]:
                yield from _statements(branch)
        elif "Action" in policy:
            yield policy
        elif "Statement" in policy:
            yield from _statements(policy["Statement"])


def function_actions() -> dict[str, set[str]]:
    """Each function (by its folder under functions/) and every IAM action its own policies grant."""
    actions: dict[str, set[str]] = {}
    for resource in template()["Resources"].values():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        name = resource["Properties"]["CodeUri"].strip("/").split("/")[-1]
        granted = actions.setdefault(name, set())
        for statement in _statements(resource["Properties"].get("Policies", [])):
            action = statement["Action"]
            granted.update([action] if isinstance(action, str) else action)
    return actions


def permission_rows(functions: set[str]) -> dict[str, list[str]]:
    """docs/security.md's permissions table: for each function, the permission cells of the rows that name
    it (or "all", or "all but" others)."""
    text = (DOCS / "security.md").read_text().split("## What each function may do, and why", 1)[1]
    rows: dict[str, list[str]] = {name: [] for name in functions}
    for line in text.split("\n## ", 1)[0].splitlines():
        if not line.startswith("| ") or line.startswith("| Function") or line.startswith("|---"):
            continue
        who, permission = [cell.strip() for cell in line.strip("|").split("|")][:2]
        named = set(re.findall(r"`([a-z_]+)`", who)) & functions
        if who.startswith("all but"):
            named = functions - named
        elif who.startswith("all"):
            named = functions
        for name in named:
            rows[name].append(permission)
    return rows


def undocumented(actions: set[str], cells: list[str]) -> list[str]:
    """The actions no cell names: `service:Action`, a bare `Action` after it, or a pattern (`List*`; a
    resource's `*` names no action)."""
    named = [token for cell in cells for token in re.findall(r"`([A-Za-z0-9:*]*[A-Za-z][A-Za-z0-9:*]*)`", cell)]
    return sorted(
        a
        for a in actions
        if not any(fnmatch.fnmatchcase(a, t) or fnmatch.fnmatchcase(a.split(":")[1], t) for t in named)
    )


def test_the_security_page_names_every_action_each_function_may_take() -> None:
    actions = function_actions()
    rows = permission_rows(set(actions))

    missing = {name: undocumented(granted, rows[name]) for name, granted in actions.items()}

    assert {name: gaps for name, gaps in missing.items() if gaps} == {}, "docs/security.md's permissions table"


def test_an_action_the_security_page_does_not_name_is_found() -> None:
    cells = ["`ec2:DescribeInstances`, `DescribeVolumes` (`*`)", "SageMaker's `List*` calls"]

    gaps = undocumented(
        {"ec2:DescribeInstances", "ec2:DescribeVolumes", "sagemaker:ListApps", "ssm:SendCommand"}, cells
    )

    assert gaps == ["ssm:SendCommand"]


def measured_rows() -> list[list[str]]:
    """The cells of each row of the README's table of what costguard was measured to do."""
    text = (ROOT / "README.md").read_text().split("## What it was measured to do", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| Promise")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in rows]


def test_the_readme_gives_each_promise_one_measured_figure_a_link_and_the_best_alternative() -> None:
    rows = measured_rows()

    promises = [re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", row[0]) for row in rows]
    expected = ["Idle GPU-hours", "Real work interrupted", "The saving it claims", "Dollars the bill saved", "Faults"]
    expected.append("A sweep at 10,000")
    expected.append("What it costs")
    assert len(promises) == len(expected)
    assert all(promise.startswith(start) for promise, start in zip(promises, expected, strict=True)), promises
    for promise, ours, alternative in rows:
        assert re.search(r"\]\(docs/benchmarks\.md#[a-z0-9-]+\)", promise), f"no link to its benchmark: {promise}"
        assert len(re.findall(r"\*\*[^*]+\*\*", ours)) == 1, f"one figure, in bold: {ours}"
        assert re.search(r"\d", alternative), f"the alternative's figure: {alternative}"


def test_the_readme_and_the_benchmarks_page_hold_no_history() -> None:
    commit = r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b"
    history = re.compile(rf"before this round|\bissue \d+|\bstop \d+\b|{commit}")

    for page in (ROOT / "README.md", DOCS / "benchmarks.md"):
        found = history.findall(_prose(page.read_text()))
        assert found == [], f"{page.name}: history belongs in docs/benchmarks-log.md"


def test_the_benchmarks_log_is_linked_once() -> None:
    linking = [page.name for page in PAGES for target in links(page) if target.startswith("benchmarks-log.md")]

    assert linking == ["benchmarks.md"]


def test_the_operators_rules_page_names_no_module_path() -> None:
    text = (DOCS / "rules.md").read_text()

    assert re.findall(r"`[\w/]+\.py`|\b(?:tests|bench|testing|idle|core|digest)/[\w/]+", text) == []
