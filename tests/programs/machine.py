"""A machine for the programs of programs/ to run on: a program runs as its document runs it (`python3 -`, the
program on its stdin), on this machine's Python or an older one, with the machine's files it reads taken from a
folder of the test's (the fake root) and the commands it runs taken from the test's folder of fakes.

The program's text is never edited: every path under FAKED (and /proc/<pid>/cgroup when the test asks) is read
under the fake root, whatever the program names it, through the calls a program reads files with (open, stat,
readlink, access, scandir: glob, os.walk and os.path go through them) and the programs it starts. The rest of
/proc (the processes the test starts, their CPU) is this machine's."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

# Folders and files whose every read is the fake root's. A test that leaves one empty gets a machine without it.
FAKED = (
    "/etc",
    "/var/spool/cron",
    "/run/systemd",
    "/sys/fs/cgroup",
    "/dev/pts",
    "/home",
    "/root",
    "/proc/sys/kernel/random/boot_id",
    "/usr/sbin/crond",
    "/sbin/crond",
)

# Runs on Python 3.6 and later, as the program does: no annotations, no f-strings with `=`.
SHIM = r"""
import builtins, os, re, subprocess, sys

ROOT, FAKE_CGROUPS, FAKED = sys.argv[1], sys.argv[2] == "1", tuple(sys.argv[3].split(":"))
CGROUP = re.compile(r"^/proc/[0-9]+/cgroup$")


def faked(path):
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path.startswith("/"):
        return path
    if any(path == f or path.startswith(f + "/") for f in FAKED) or (FAKE_CGROUPS and CGROUP.match(path)):
        return ROOT + path
    return path


def redirect(module, name):
    real = getattr(module, name)

    def call(path, *args, **kwargs):
        return real(faked(path), *args, **kwargs)

    setattr(module, name, call)


for name in ("stat", "lstat", "readlink", "access", "scandir", "listdir"):
    redirect(os, name)
redirect(builtins, "open")


class Popen(subprocess.Popen):
    def __init__(self, args, *rest, **kwargs):
        if isinstance(args, (list, tuple)) and args:
            args = [faked(args[0])] + list(args[1:])
        super().__init__(args, *rest, **kwargs)


subprocess.Popen = Popen
program = sys.stdin.read()
sys.stdin = open(os.devnull)
sys.argv = ["-"] + sys.argv[4:]
exec(compile(program, "<stdin>", "exec"), {"__name__": "__main__", "__builtins__": builtins})
"""


def tools(folder: Path) -> Path:
    """The few commands the tests' fakes use (their shell is /bin/sh), and nothing of this machine's that a
    program could run instead of a fake: no nvidia-smi, journalctl, systemctl, atq here."""
    folder.mkdir(exist_ok=True)
    for name in ("cat", "sleep"):
        link = folder / name
        if not link.exists():
            link.symlink_to(next(Path(d) / name for d in ("/usr/bin", "/bin") if (Path(d) / name).exists()))
    return folder


def run_program(
    program: Path,
    fake_root: Path,
    *,
    path: Sequence[Path],
    env: Mapping[str, str] | None = None,
    variables: Mapping[str, str] | None = None,
    fake_cgroups: bool = False,
    python: str = sys.executable,
    timeout: float = 60,
) -> str:
    """The program's standard output. `variables` are what CloudFormation fills in when it deploys the program's
    document (`${Name}` in its `!Sub`); `path` is the PATH it runs its commands from."""
    source = program.read_text(encoding="utf-8")
    for name, value in (variables or {}).items():
        assert source.count("${%s}" % name) == 1, name  # noqa: UP031 (the text as CloudFormation reads it)
        source = source.replace("${%s}" % name, value)  # noqa: UP031
    ran = subprocess.run(
        [python, "-c", SHIM, str(fake_root), "1" if fake_cgroups else "0", ":".join(FAKED)],
        input=source,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**(env or {}), "PATH": ":".join(str(p) for p in path)},
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout
