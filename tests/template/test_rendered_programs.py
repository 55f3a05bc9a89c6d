"""template.yaml carries the programs of programs/ as `make render` writes them (scripts/render_template.py): the
committed template is the render, the deployed documents run the files byte for byte, and the activity check's
SSM document stays a fixed text with no parameters."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from scripts.render_template import PROGRAMS, TEMPLATE, Program, RenderError, escaped, main, render
from testing.template import template

ACTIVITY_CHECK, NOTEBOOK_REPORTER = PROGRAMS


def between_heredoc_lines(script: str, opening: str) -> str:
    return script.split(opening + "\n", 1)[1].split("\nPY\n", 1)[0] + "\n"


def test_the_committed_template_is_the_render_of_the_programs() -> None:
    committed = TEMPLATE.read_text(encoding="utf-8")
    assert render(committed) == committed, "template.yaml is not rendered from programs/: run `make render`"


def test_the_deployed_activity_check_runs_the_program_file_byte_for_byte() -> None:
    content = template()["Resources"]["ActivityCheckDocument"]["Properties"]["Content"]
    [command] = content["mainSteps"][0]["inputs"]["runCommand"]
    deployed = between_heredoc_lines(command["Fn::Sub"], ACTIVITY_CHECK.opening)
    # CloudFormation writes `${!` as `${` and fills in ${SystemServices}: the only variable the program has.
    assert re.findall(r"\$\{(?!!)([^}]*)\}", deployed) == ["SystemServices"]
    assert deployed.replace("${!", "${") == ACTIVITY_CHECK.path.read_text(encoding="utf-8")


def test_the_deployed_notebook_reporter_is_the_program_file_byte_for_byte() -> None:
    [start] = template()["Resources"]["NotebookActivityConfig"]["Properties"]["OnStart"]
    deployed = between_heredoc_lines(start["Content"]["Fn::Base64"], NOTEBOOK_REPORTER.opening)
    assert deployed == NOTEBOOK_REPORTER.path.read_text(encoding="utf-8")


def test_the_activity_check_document_stays_parameterless() -> None:
    # costguard's role may send this one document: with no parameters, nothing it sends can change what runs.
    content = template()["Resources"]["ActivityCheckDocument"]["Properties"]["Content"]
    assert "parameters" not in content
    [command] = content["mainSteps"][0]["inputs"]["runCommand"]
    assert "{{" not in command["Fn::Sub"]  # SSM's parameter syntax


def stale_template(tmp_path: Path) -> tuple[Path, tuple[Program, ...]]:
    """A copy of the template and of the programs, the notebook reporter changed since the render."""
    copies = []
    for program in PROGRAMS:
        copy = tmp_path / program.path.name
        shutil.copy(program.path, copy)
        copies.append(replace(program, path=copy))
    reporter = copies[1].path
    reporter.write_text(reporter.read_text().replace("RECENT = 330", "RECENT = 600"))
    copied = tmp_path / "template.yaml"
    shutil.copy(TEMPLATE, copied)
    return copied, tuple(copies)


def test_a_program_changed_since_the_render_makes_the_check_fail_and_the_render_carry_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copied, programs = stale_template(tmp_path)
    monkeypatch.setattr("scripts.render_template.PROGRAMS", programs)
    assert main(["--check", "--template", str(copied)]) == 1
    assert "+              RECENT = 600" in capsys.readouterr().err
    assert main(["--template", str(copied)]) == 0
    rendered = copied.read_text()
    assert "              RECENT = 600  # a kernel" in rendered
    assert rendered.replace("RECENT = 600", "RECENT = 330") == TEMPLATE.read_text()  # that line and nothing else
    assert main(["--check", "--template", str(copied)]) == 0


def test_in_the_activity_checks_sub_every_dollar_brace_is_escaped_but_the_templates_variable() -> None:
    source = 'x = "${SystemServices}"\ny = "${SHELL:-/bin/sh} ${SystemServicesOld}"\n'
    assert (
        escaped(source, ("SystemServices",))
        == 'x = "${SystemServices}"\ny = "${!SHELL:-/bin/sh} ${!SystemServicesOld}"\n'
    )
    assert escaped(source, None) == source  # the notebook's script is no `!Sub`


def test_a_program_line_that_would_end_the_heredoc_is_refused(tmp_path: Path) -> None:
    program = tmp_path / "notebook_reporter.py"
    program.write_text('text = """\nPY\n"""\n')
    with pytest.raises(RenderError, match="heredoc"):
        render(TEMPLATE.read_text(), [replace(NOTEBOOK_REPORTER, path=program)])
