"""`make render`: writes the programs under programs/ into template.yaml's documents.

Two programs run on the machines, not in Lambda: the activity check (the SSM document ActivityCheckDocument runs it
with the machine's python3) and the notebook reporter (the SageMaker lifecycle configuration NotebookActivityConfig
writes it to the notebook instance). Each is a file under programs/, the one place it is edited, linted, type-checked
and tested; template.yaml carries a copy, inside a shell heredoc (`<<'PY'` ... `PY`), because the document and the
lifecycle configuration must be whole in the stack: the SSM document stays a fixed text with no parameters (the
security model relies on it: costguard's role may run that document and nothing else).

Rendering replaces only the lines between each heredoc's opening line and its `PY` line; everything else in the
template is left as it is. In the activity check's `!Sub`, every `${` is escaped as `${!` except the template's own
variables (`${SystemServices}`, the parameter CloudFormation fills in when it deploys). A test
(tests/template/test_rendered_programs.py) fails when the committed template differs from the render.

    python -m scripts.render_template            # rewrite template.yaml (only if it changes)
    python -m scripts.render_template --check    # exit 1 and show the difference when it is not rendered
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"
END = "PY"  # the heredoc's terminator: a program must have no line that is exactly this


@dataclass(frozen=True)
class Program:
    resource: str  # the template's logical id
    opening: str  # how the heredoc's opening line ends
    path: Path
    variables: tuple[str, ...] | None  # in a `!Sub`: the `${Name}`s left to CloudFormation; None: no `!Sub`


PROGRAMS = (
    Program(
        "ActivityCheckDocument", "exec python3 - <<'PY'", ROOT / "programs" / "activity_check.py", ("SystemServices",)
    ),
    Program(
        "NotebookActivityConfig",
        "cat > /home/ec2-user/costguard-activity.py <<'PY'",
        ROOT / "programs" / "notebook_reporter.py",
        None,
    ),
)


class RenderError(ValueError):
    pass


def escaped(source: str, variables: tuple[str, ...] | None) -> str:
    """The program as it must be written in its template string: in a `!Sub`, `${` is CloudFormation's unless
    written `${!`, so every `${` but the template's own variables is escaped."""
    if variables is None:
        return source
    kept = "|".join(re.escape(name) for name in variables)
    return re.sub(r"\$\{(?!(?:" + kept + r")\})", "${!", source) if kept else source.replace("${", "${!")


def _block(lines: list[str], program: Program) -> tuple[int, int, str]:
    """The first and last line of the program's heredoc body (end exclusive), and its indentation."""
    resource = f"  {program.resource}:"
    try:
        start = lines.index(resource)
    except ValueError:
        raise RenderError(f"template.yaml has no resource {program.resource}") from None
    following = (n for n in range(start + 1, len(lines)) if lines[n].startswith("  ") and lines[n][2:3].isalnum())
    stop = next(following, len(lines))  # the next resource
    openings = [n for n in range(start + 1, stop) if lines[n].endswith(program.opening)]
    if len(openings) != 1:
        raise RenderError(
            f"{program.resource}: expected one line ending with {program.opening!r}, found {len(openings)}"
        )
    opening = openings[0]
    indent = " " * (len(lines[opening]) - len(lines[opening].lstrip(" ")))
    for end in range(opening + 1, stop):
        if lines[end] == indent + END:
            return opening + 1, end, indent
    raise RenderError(f"{program.resource}: the heredoc opened at line {opening + 1} has no {END!r} line")


def render(template: str, programs: Sequence[Program] | None = None) -> str:
    """The template with each program's current text between its heredoc's lines."""
    lines = template.split("\n")
    for program in PROGRAMS if programs is None else programs:
        source = program.path.read_text(encoding="utf-8")
        body = escaped(source, program.variables).split("\n")
        if body[-1] == "":
            body.pop()  # the file's last newline is the heredoc line's
        if END in body:
            raise RenderError(f"{program.path.name}: a line {END!r} would end the heredoc early")
        first, end, indent = _block(lines, program)
        lines[first:end] = [indent + line if line else "" for line in body]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when template.yaml is not the render")
    parser.add_argument("--template", type=Path, default=TEMPLATE)
    args = parser.parse_args(argv)
    current = args.template.read_text(encoding="utf-8")
    rendered = render(current)
    if rendered == current:
        return 0
    if args.check:
        diff = difflib.unified_diff(
            current.splitlines(keepends=True), rendered.splitlines(keepends=True), "template.yaml", "rendered"
        )
        sys.stderr.writelines(diff)
        sys.stderr.write("template.yaml is not rendered from programs/: run `make render`\n")
        return 1
    args.template.write_text(rendered, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
