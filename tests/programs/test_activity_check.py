"""The activity check (programs/activity_check.py) itself, run as its SSM document runs it, on this machine's
processes and a fake root (tests/programs/machine.py): a cgroup v2 tree, a journal, crontabs, timers, terminals,
Jupyter servers and a keep-alive hook of the test's. What it reports of the system's own services (running, ended,
ending) and of everything else, the busy processes it leaves out because a system service runs them, the machine's
scheduled jobs, and the bounds of its output and time."""

from __future__ import annotations

import ast
import calendar
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from costguard.idle.rules.activity import BLINDING, CpuAccount, parse_report
from costguard.idle.rules.jobs import next_run
from scripts.render_template import PROGRAMS
from testing.jobs import cut, next_job
from testing.template import template
from tests.programs.machine import FAKED, run_program, tools

RESOURCES = "MESSAGE_ID=ae8f7b866b0347b9af31fe1c80b127c0"  # systemd's "unit consumed resources" message
CHECK = PROGRAMS[0].path


def cgroup(root: Path, name: str, usage_usec: int, populated: bool | None = None) -> None:
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "cpu.stat").write_text(f"usage_usec {usage_usec}\nuser_usec 1\nsystem_usec 1\n")
    if populated is not None:
        (path / "cgroup.events").write_text(f"populated {int(populated)}\nfrozen 0\n")


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, Any]:
    """A cgroup v2 machine: what ran since boot, and the journal of services that ended. Its files are under a
    fake root (`fake`): /sys/fs/cgroup, /etc, /var/spool/cron, /run/systemd/system, /dev/pts, /home..."""
    fake = tmp_path / "machine"
    root = fake / "sys" / "fs" / "cgroup"
    root.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu io memory pids\n")
    cgroup(root, "system.slice", 30_000_000)  # everything in it, ended services included
    cgroup(root, "system.slice/apt-daily-upgrade.service", 3_000_000, populated=True)
    cgroup(root, "system.slice/cron.service", 1_000_000, populated=True)
    cgroup(root, "system.slice/snapd.service", 500_000, populated=False)  # ending: its figure is in the journal
    cgroup(root, "user.slice", 2_000_000)
    cgroup(root, "init.scope", 400_000, populated=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    journal = [
        {"UNIT": "apt-daily.service", "CPU_USAGE_NSEC": "7000000000", "__REALTIME_TIMESTAMP": "1000"},
        {"UNIT": "cron.service", "CPU_USAGE_NSEC": "9000000000", "__REALTIME_TIMESTAMP": "1000"},  # not ours
        {"UNIT": "snapd.service", "CPU_USAGE_NSEC": "500000000", "__REALTIME_TIMESTAMP": "2000"},
        {"UNIT": "man-db.service", "CPU_USAGE_NSEC": "8000000000", "__REALTIME_TIMESTAMP": "99999999999999999"},
    ]
    journalctl = bin_dir / "journalctl"
    lines = "\n".join(json.dumps(e) for e in journal)
    journalctl.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/journalctl-args\ncat <<'EOF'\n{lines}\nEOF\n")
    journalctl.chmod(0o755)
    boot = fake / "proc" / "sys" / "kernel" / "random" / "boot_id"
    boot.parent.mkdir(parents=True)
    boot.write_text("8d2c1f0e-boot\n")
    etc, spool = fake / "etc", fake / "var" / "spool" / "cron"  # no crontab, no cron.d, no spool: see `schedules`
    etc.mkdir()
    spool.mkdir(parents=True)
    # Not booted with systemd (no /run/systemd/system) until a test says so; no at, no nvidia-smi, whatever this
    # machine has (the check's PATH holds only the test's fakes and `tools`); no cronie (no /usr/sbin/crond).
    systemd = fake / "run" / "systemd" / "system"
    return {
        "tmp": tmp_path,
        "fake": fake,
        "root": root,
        "bin": bin_dir,
        "boot": boot,
        "etc": etc,
        "spool": spool,
        "systemd": systemd,
    }


def run_check(
    machine: dict[str, Any],
    *,
    fake_cgroups: bool = False,
    services: str | None = None,
    tz: str = "UTC",
    python: str = sys.executable,
) -> str:
    """What the check prints, its document's ${SystemServices} filled in with `services` (the parameter's
    default unless given); with `fake_cgroups`, a process's /proc/<pid>/cgroup is the fake root's."""
    default = str(template()["Parameters"]["SystemServices"]["Default"])
    return run_program(
        CHECK,
        machine["fake"],
        path=[machine["bin"], tools(machine["tmp"] / "tools")],
        env={"TZ": tz},  # the machine's clock, for atq's and systemctl's dates
        variables={"SystemServices": default if services is None else services},
        fake_cgroups=fake_cgroups,
        python=python,
    )


def fake_cgroup(machine: dict[str, Any], pid: int, line: str) -> None:
    path = machine["fake"] / "proc" / str(pid) / "cgroup"
    path.parent.mkdir(parents=True)
    path.write_text(line)


def test_every_path_the_check_reads_is_the_fake_roots_but_the_processes(machine: dict[str, Any]) -> None:
    # A path the check names that the fake root does not hold would be read from this machine: name it here.
    processes = ("/proc/%s/cmdline", "/proc/%s/exe", "/proc/%s/stat", "/proc/[0-9]*/stat", "/proc/%s/cgroup")
    named = {
        node.value
        for node in ast.walk(ast.parse(CHECK.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/")
    }
    assert "/etc/" in named  # the walk finds them
    outside = [p for p in named if not any(p == f or p.startswith(f + "/") for f in FAKED)]
    not_files = ("/", "/init.scope", "/api/kernels?token=")  # a separator, a cgroup's name, a URL's path
    assert sorted(outside) == sorted(processes + not_files)


def test_cgroup_v2_accounting_counts_the_system_services_running_ending_and_ended_once(machine: dict[str, Any]) -> None:
    report = parse_report(run_check(machine))
    # Everything: the top-level cgroups (30 + 2 + 0.4 s). The system's own: apt-daily-upgrade running (3 s),
    # PID 1 (0.4 s), apt-daily and snapd ended (7 + 0.5 s) as the journal says; not cron, running or ended,
    # nor snapd's emptied cgroup a second time, nor what ended after the counters were read.
    assert report.cpu_account == CpuAccount("8d2c1f0e-boot", 32.4, 10.9)
    args = (machine["tmp"] / "journalctl-args").read_text().split()
    assert args[:2] == ["-b", "-q"]  # this boot only
    assert RESOURCES in args


def test_a_journal_that_cannot_be_read_gives_no_account_rather_than_a_wrong_one(machine: dict[str, Any]) -> None:
    (machine["bin"] / "journalctl").write_text("#!/bin/sh\nexit 1\n")
    report = parse_report(run_check(machine))
    assert report.cpu_account is None
    assert "cgroup: OSError" in report.errors


def test_a_cgroup_v1_host_says_so_and_nothing_more(machine: dict[str, Any]) -> None:
    (machine["root"] / "cgroup.controllers").unlink()
    out = json.loads(run_check(machine).strip().splitlines()[-1])
    assert out["cg"] == {"v": 1}
    assert parse_report(json.dumps(out)).cpu_account is None


@pytest.mark.parametrize(
    ("cgroup_line", "listed"),
    [
        ("0::/system.slice/apt-daily-upgrade.service\n", False),  # unattended-upgrades at work: the system's
        ("0::/user.slice/user-1000.slice/session-4.scope\n", True),  # someone's job in their session
        ("0::/system.slice/cron.service\n", True),  # a cron job
        ("1:name=systemd:/system.slice/snapd.service\n0::/\n", False),  # a cgroup v1 host says so too
    ],
)
def test_busy_processes_of_the_systems_services_are_left_out(
    machine: dict[str, Any], cgroup_line: str, listed: bool
) -> None:
    busy = subprocess.Popen([sys.executable, "-c", "#i22busy\nwhile True: pass"])
    try:
        fake_cgroup(machine, busy.pid, cgroup_line)
        report = parse_report(run_check(machine, fake_cgroups=True))
    finally:
        busy.kill()
        busy.wait()
    names = [p.name for p in report.cpu]  # this machine is shared: other processes may be busy too
    assert any("#i22busy" in n for n in names) is listed, names


# ------------------------------------------------------------------ the SSM agent's own cgroup
# amazon-ssm-agent.service runs with KillMode=process because Session Manager shells and Run Command jobs
# live in its cgroup and must outlive a restart of the agent: a job started there is someone's work.
SSM_AGENT_CGROUP = "0::/system.slice/amazon-ssm-agent.service\n"


def program(tmp_path: Path, name: str, source: str) -> Path:
    """A copy of a system binary under another name: a process whose executable is `name`."""
    path = tmp_path / name
    path.write_bytes(Path(source).read_bytes())
    path.chmod(0o755)
    return path


def test_a_job_started_from_a_session_manager_shell_is_listed_but_the_agents_own_programs_are_not(
    machine: dict[str, Any], tmp_path: Path
) -> None:
    job = subprocess.Popen([sys.executable, "-c", "#i22session\nwhile True: pass"])
    agent = subprocess.Popen([str(program(tmp_path, "amazon-ssm-agent", "/usr/bin/yes"))], stdout=subprocess.DEVNULL)
    try:
        for pid in (job.pid, agent.pid):
            fake_cgroup(machine, pid, SSM_AGENT_CGROUP)
        report = parse_report(run_check(machine, fake_cgroups=True))
    finally:
        for running in (job, agent):
            running.kill()
            running.wait()
    names = [p.name for p in report.cpu]
    assert any("#i22session" in n for n in names), names  # a person's job, in the agent's cgroup
    assert not any(n.startswith("amazon-ssm-agent") for n in names), names  # the agent itself: the system's


def test_the_ssm_agents_cgroup_counts_as_the_systems_only_for_the_agents_own_programs(
    machine: dict[str, Any], tmp_path: Path
) -> None:
    # Its cgroup's 50 s include a Run Command job's and a Session Manager shell's CPU; the journal's 40 s are
    # the whole cgroup's when the agent last restarted (what it ran included). Neither is the system's: only
    # the agent's own processes' CPU is (here a sleeping one, so next to nothing).
    agent = subprocess.Popen([str(program(tmp_path, "amazon-ssm-agent", "/usr/bin/sleep")), "30"])
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        cgroup(machine["root"], "system.slice", 120_000_000)  # everything in it: the agent's 90 s too
        unit = machine["root"] / "system.slice" / "amazon-ssm-agent.service"
        cgroup(machine["root"], "system.slice/amazon-ssm-agent.service", 50_000_000, populated=True)
        (unit / "cgroup.procs").write_text(f"{agent.pid}\n{job.pid}\n")
        journal = machine["bin"] / "journalctl"
        restarted = json.dumps(
            {"UNIT": "amazon-ssm-agent.service", "CPU_USAGE_NSEC": "40000000000", "__REALTIME_TIMESTAMP": "1500"}
        )
        journal.write_text(journal.read_text().replace("\nEOF\n", f"\n{restarted}\nEOF\n"))
        report = parse_report(run_check(machine))
    finally:
        for running in (agent, job):
            running.kill()
            running.wait()
    assert report.cpu_account is not None
    assert report.cpu_account.system_s == pytest.approx(10.9, abs=0.2)  # as without the agent's cgroup


def test_a_system_unit_in_a_sub_slice_is_counted_while_it_runs_as_the_journal_counts_it_once_ended(
    machine: dict[str, Any],
) -> None:
    # Template instances run in a slice of their own (system.slice/system-e2scrub.slice/e2scrub@...): counted
    # only once ended, their journal figure would bring the CPU they used before an answer into the stretch
    # after it, and make the others' CPU look like less than it was.
    cgroup(machine["root"], "system.slice/system-e2scrub.slice", 2_000_000)
    cgroup(machine["root"], "system.slice/system-e2scrub.slice/e2scrub@dev-vda1.service", 2_000_000, populated=True)
    report = parse_report(run_check(machine))
    assert report.cpu_account == CpuAccount("8d2c1f0e-boot", 32.4, 12.9)  # 10.9 s, and e2scrub's 2 s


def test_a_notebook_kernel_no_jupyter_server_lists_is_reported_from_its_process(machine: dict[str, Any]) -> None:
    # VS Code's notebooks start ipykernel themselves, with no server whose runtime file the check reads.
    kernel = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "-m", "ipykernel_launcher", "--f=/tmp/kernel-v2-1.json"]
    )
    try:
        report = parse_report(run_check(machine))
    finally:
        kernel.kill()
        kernel.wait()
    assert report.kernels == ()  # no Jupyter server to ask
    assert report.kernel_processes >= 1  # this machine is shared: others may run one too


def test_gpus_are_not_reported_when_nvidia_smi_could_not_list_the_processes_on_them(machine: dict[str, Any]) -> None:
    fake = machine["bin"] / "nvidia-smi"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$1" in --query-compute-apps*) echo "Unable to determine the device handle"; exit 15;; esac\n'
        'echo "0, 0, 30000"\n'
    )
    fake.chmod(0o755)
    report = parse_report(run_check(machine))
    assert report.gpus is None  # a GPU whose processes are unknown must not pass for an idle one
    assert any(e.startswith("nvidia-smi") for e in report.errors)


@contextlib.contextmanager
def kernel_servers(machine: dict[str, Any], kernels: list[dict[str, str]], servers: int) -> Iterator[None]:
    """Local Jupyter servers answering /api/kernels with `kernels`, their runtime files in a user's home."""

    class Kernels(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(kernels).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    runtime = jupyter_runtime(machine)
    running = []
    for n in range(servers):
        server = HTTPServer(("127.0.0.1", 0), Kernels)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        running.append(server)
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        (runtime / f"jpserver-{n}.json").write_text(json.dumps({"url": url, "token": "t"}))
    try:
        yield
    finally:
        for server in running:
            server.shutdown()


def jupyter_runtime(machine: dict[str, Any]) -> Path:
    """Where a user's Jupyter server writes its runtime files, on the fake root."""
    runtime: Path = machine["fake"] / "home" / "ana" / ".local" / "share" / "jupyter" / "runtime"
    runtime.mkdir(parents=True, exist_ok=True)
    return runtime


def jupyter_server(machine: dict[str, Any], url: str) -> None:
    """One Jupyter server's runtime file, where its user's is found."""
    (jupyter_runtime(machine) / "jpserver-4242.json").write_text(json.dumps({"url": url, "token": "t"}))


def test_a_jupyter_server_that_is_gone_is_no_error_but_one_that_does_not_answer_is(machine: dict[str, Any]) -> None:
    import socket  # noqa: PLC0415

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{closed.getsockname()[1]}/"  # a runtime file left by a server killed
    jupyter_server(machine, gone)
    report = parse_report(run_check(machine))
    assert not [e for e in report.errors if e.startswith("jupyter")]
    with socket.socket() as silent:  # listening, never answering: its kernels are unknown
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        jupyter_server(machine, url)
        report = parse_report(run_check(machine))
    assert [e for e in report.errors if e.startswith("jupyter")]


# ------------------------------------------------------------------ bounded output and time
RUN_COMMAND_OUTPUT = 2500  # ListCommandInvocations returns the first 2,500 characters of a plugin's output


def test_the_report_of_a_crowded_8_gpu_box_fits_what_run_command_returns(
    schedules: dict[str, Any], tmp_path: Path
) -> None:
    # 12 terminals, 3 Jupyter servers of 10 kernels, 16 processes holding GPU memory, 10 of them with long
    # names in other alphabets (JSON escapes each such character in 6), a hook's long line, 8 GPUs, 40 cron
    # jobs of such names and the schedules of the fixture. (Busy processes are this shared machine's own: up
    # to 8 more entries.)
    machine = schedules
    long = "предобработка_данных_模型训练_données"
    (machine["spool"] / "crontabs" / "eve").write_text("".join(f"{m} 4 * * * /opt/{long}.sh\n" for m in range(40)))
    runner = tmp_path / f"{long}"
    runner.symlink_to(sys.executable)
    busy = [subprocess.Popen([str(runner), "-c", "import time; time.sleep(60)", long, long]) for _ in range(10)]
    pts = machine["fake"] / "dev" / "pts"
    pts.mkdir(parents=True)
    for n in range(12):
        (pts / str(n)).write_text("")
    keep_alive(machine, f"#!/bin/sh\necho '{long * 6}'\nexit 1\n")
    smi = machine["bin"] / "nvidia-smi"
    apps = "\\n".join(f"{p.pid}, 30000" for p in busy) + "\\n" + "\\n".join(f"{90000 + n}, 500" for n in range(6))
    gpus = "\\n".join(f"{g}, 0, 30000" for g in range(8))
    smi.write_text(
        f'#!/bin/sh\ncase "$1" in --query-compute-apps*) printf "{apps}\\n";; *) printf "{gpus}\\n";; esac\n'
    )
    smi.chmod(0o755)
    kernels = [{"execution_state": "idle", "last_activity": "2026-11-21T01:00:00.000000Z"}] * 10
    with kernel_servers(machine, kernels, servers=3):
        try:
            output = run_check(machine)
        finally:
            for process in busy:
                process.kill()
                process.wait()
    line = output.strip().splitlines()[-1]
    assert len(line) <= RUN_COMMAND_OUTPUT - 100, len(line)
    report = parse_report(line)  # what decides is all there: input, kernels, GPU memory held
    assert len(report.sessions) >= 1
    assert report.sessions[0].tty.startswith("pts/")
    assert len(report.kernels) >= 1
    assert report.gpu[0].gpu_mib == 30000
    assert [g.index for g in report.gpus or ()] == list(range(8))  # every GPU
    assert report.cpu_account == CpuAccount("8d2c1f0e-boot", 32.4, 10.9)
    assert report.jobs is not None
    assert report.jobs.found == 50
    assert len(report.jobs.jobs) >= 1  # the soonest, and how many there were


def keep_alive(machine: dict[str, Any], script: str) -> None:
    """The owner's hook, /etc/costguard/keep-alive."""
    hook = machine["etc"] / "costguard" / "keep-alive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(script)
    hook.chmod(0o755)


def deadline_seconds() -> int:
    """The time the check gives itself (DEADLINE_SECONDS), as the program says."""
    [value] = [
        node.value.value
        for node in ast.walk(ast.parse(CHECK.read_text()))
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", "") for t in node.targets] == ["DEADLINE_SECONDS"]
        and isinstance(node.value, ast.Constant)
    ]
    assert isinstance(value, int)
    return value


def test_a_hung_nvidia_smi_and_a_hung_hook_leave_the_check_time_to_answer(machine: dict[str, Any]) -> None:
    smi = machine["bin"] / "nvidia-smi"
    smi.write_text("#!/bin/sh\nsleep 100\n")  # a GPU stuck in the driver
    smi.chmod(0o755)
    keep_alive(machine, "#!/bin/sh\nsleep 100\n")
    started = time.monotonic()
    output = run_check(machine)
    # Within its own time (costguard waits 45 s for the answer, SSM kills the check at 60): a few seconds more
    # than DEADLINE_SECONDS for Python's start and the last steps, and room for a loaded machine (a hook left to
    # run its 100 s, or nvidia-smi, would still be well past it).
    assert deadline_seconds() <= 30
    assert time.monotonic() - started < deadline_seconds() + 12
    report = parse_report(output)
    assert report.gpus is None
    assert report.blind().startswith("nvidia-smi")
    assert any(e.startswith("hook") for e in report.errors)  # its owner's word unknown: not "no"


OLD_PYTHONS = sorted(
    str(p) for v in ("3.6", "3.7") for p in (Path.home() / ".pyenv" / "versions").glob(f"{v}.*/bin/python{v}")
)


@pytest.mark.parametrize("python", OLD_PYTHONS or [pytest.param("", marks=pytest.mark.skip("no Python 3.6/3.7 here"))])
def test_the_check_runs_on_the_python_3_of_amazon_linux_2_and_ubuntu_18_04(
    schedules: dict[str, Any], python: str
) -> None:
    machine = schedules  # every kind of scheduled job too
    kernel = subprocess.Popen([python, "-c", "import time; time.sleep(30)", "ipykernel_launcher"])
    try:
        report = parse_report(run_check(machine, python=python))
    finally:
        kernel.kill()
        kernel.wait()
    assert report.cpu_account == CpuAccount("8d2c1f0e-boot", 32.4, 10.9)
    assert report.kernel_processes >= 1
    assert report.jobs is not None
    assert (report.jobs.found, report.jobs.system, report.jobs.skipped) == (10, 8, 0)


# ------------------------------------------------------------------ the machine's scheduled jobs
# /etc/crontab and /etc/cron.d as a stock Ubuntu 22.04 ships them (cron 3.0pl1, e2fsprogs, popularity-contest).
UBUNTU_CRONTAB = """SHELL=/bin/sh
# You can also override PATH, but by default, newer versions inherit it from the environment
#PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin

# Example of job definition:
# .---------------- minute (0 - 59)
# m h dom mon dow user  command
17 *    * * *   root    cd / && run-parts --report /etc/cron.hourly
25 6    * * *   root    test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.daily )
47 6    * * 7   root    test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.weekly )
52 6    1 * *   root    test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.monthly )
#
"""
E2SCRUB_ALL = (
    "30 3 * * 0 root test -e /run/systemd/system || "
    "SERVICE_MODE=1 /usr/lib/x86_64-linux-gnu/e2fsprogs/e2scrub_all_cron\n"
    "10 3 * * * root test -e /run/systemd/system || SERVICE_MODE=1 /sbin/e2scrub_all -A -r\n"
)
POPULARITY_CONTEST = """SHELL=/bin/sh
PATH=/usr/bin:/bin
45 12 * * * root test -x /etc/cron.daily/popularity-contest && /etc/cron.daily/popularity-contest --crond
"""
SECRETS = ("hunter2", "s3cr3t", "AKIAEXAMPLE", "xyz-at-secret", "/home/ana/train.py", "--dataset")
AT_JOB = """#!/bin/sh
# atrun uid=1000 gid=1000
# mail ana 0
umask 22
PATH=/usr/bin:/bin; export PATH
cd /home/ana || {
\t echo 'Execution directory inaccessible' >&2
\t exit 1
}
${SHELL:-/bin/sh} << 'marcinDELIMITER2f4a1b3c'
# evaluate the checkpoint
cd /home/ana/eval
python3 eval.py --token=xyz-at-secret
marcinDELIMITER2f4a1b3c
"""


def fake(machine: dict[str, Any], name: str, body: str) -> None:
    path = machine["bin"] / name
    path.write_text(f'#!/bin/sh\necho "$@" >> {machine["tmp"]}/{name}-args\n{body}')
    path.chmod(0o755)


def timers_json(now: float) -> str:
    return json.dumps(
        [
            {
                "next": int((now + 3600) * 1e6),
                "left": 1,
                "last": None,
                "passed": None,
                "unit": "apt-daily.timer",
                "activates": "apt-daily.service",
            },
            # systemd 256 and later list the units a timer starts; older ones name the one
            {
                "next": int((now + 7200) * 1e6),
                "left": 1,
                "last": None,
                "passed": None,
                "unit": "nightly-train.timer",
                "activates": ["nightly-train.service"],
            },
            {
                "next": None,
                "left": None,
                "last": None,
                "passed": None,
                "unit": "model-sync.timer",
                "activates": "model-sync.service",
            },
        ]
    )


SHOW = """TimersCalendar={ OnCalendar=*-*-* 06,18:00:00 ; next_elapse=Sun 2026-11-22 06:00:00 UTC }
Id=apt-daily.timer

TimersCalendar={ OnCalendar=Mon..Fri *-*-* 22:00:00 ; next_elapse=Mon 2026-11-23 22:00:00 UTC }
TimersCalendar={ OnCalendar=Sat,Sun *-*-* 10:00:00 ; next_elapse=Sun 2026-11-22 10:00:00 UTC }
Id=nightly-train.timer

TimersMonotonic={ OnUnitActiveUSec=1d ; next_elapse=n/a }
Id=model-sync.timer
"""


@pytest.fixture
def schedules(machine: dict[str, Any]) -> dict[str, Any]:
    """A machine's scheduled jobs: Ubuntu's own, a team's in /etc/crontab and /etc/cron.d, users' crontabs in
    Debian's spool and in RHEL's, systemd's timers, the at queue."""
    etc, spool, tmp = machine["etc"], machine["spool"], machine["tmp"]
    (etc / "cron.d").mkdir()
    (etc / "crontab").write_text(UBUNTU_CRONTAB + "0 5 * * 1-5 ml /opt/etl/run.sh --password=hunter2\n")
    (etc / "cron.d" / "e2scrub_all").write_text(E2SCRUB_ALL)
    (etc / "cron.d" / "popularity-contest").write_text(POPULARITY_CONTEST)
    (etc / "cron.d" / "feature-store").write_text(
        "CRON_TZ=America/New_York\n*/15 9-17 * * mon-fri ml nice -n 10 python3 /srv/features.py --token=s3cr3t\n"
    )
    (etc / "cron.d" / "feature-store.dpkg-old").write_text("0 0 * * * root python3 /srv/old.py\n")  # cron skips it
    (spool / "crontabs").mkdir()
    (spool / "crontabs" / "ana").write_text(
        "# m h dom mon dow command\nMAILTO=ana@example.com\n"
        "30 2 * * * cd /home/ana && python3 /home/ana/train.py --dataset s3://b --key=AKIAEXAMPLE\n"
        "@reboot /home/ana/start-notebook.sh\n"
        "@daily flock -n /tmp/sync.lock /home/ana/sync.sh > /dev/null 2>&1\n"
    )
    (spool / "bob").write_text("0 */6 1-15/2 jan-jun * /usr/bin/env LANG=C bash -c 'date'\n")  # RHEL's spool
    machine["systemd"].mkdir(parents=True)
    (tmp / "timers.json").write_text(timers_json(time.time()))
    (tmp / "show.txt").write_text(SHOW)
    fake(
        machine,
        "systemctl",
        f'case "$*" in\n  *list-timers*--output=json*) cat {tmp}/timers.json;;\n'
        f"  *list-timers*) cat {tmp}/timers.txt;;\n  show*) cat {tmp}/show.txt;;\nesac\n",
    )
    (tmp / "at-3").write_text(AT_JOB)
    # atq's two ways of printing a time (the check runs with TZ=UTC here), and a job running now ("=").
    machine["at"] = [int(time.time()) // 60 * 60 + 86400, int(time.time()) // 60 * 60 + 2 * 86400]
    first, second = (datetime.fromtimestamp(t, UTC) for t in machine["at"])
    ctime, iso = f"{first:%a %b %d %H:%M:%S %Y}", f"{second:%Y-%m-%d %H:%M}"
    (tmp / "atq.txt").write_text(f"3\t{ctime} a ana\n4\t{iso} b root\n5\t{ctime} = ana\n")
    fake(machine, "atq", f"cat {tmp}/atq.txt\n")
    fake(machine, "at", f'[ "$2" = 3 ] && cat {tmp}/at-3\n[ "$2" = 4 ] && echo "no such job"\nexit 0\n')
    return machine


def job_errors(output: str) -> list[str]:
    return [e for e in parse_report(output).errors if e.startswith(("cron", "timers", "at"))]


def jobs_of(output: str) -> dict[str, Any]:
    jobs: dict[str, Any] = json.loads(output.strip().splitlines()[-1])["jobs"]
    return jobs


def listed(jobs: dict[str, Any]) -> set[tuple[str, ...]]:
    return {(j["k"], j.get("s", ""), j["c"], j.get("u", ""), j.get("z", "")) for j in jobs["list"]}


def test_each_kind_of_scheduled_job_is_reported_by_its_programs_name_and_never_its_arguments(
    schedules: dict[str, Any],
) -> None:
    output = run_check(schedules)
    jobs = jobs_of(output)
    assert listed(jobs) == {
        ("cron", "0 5 * * 1-5", "run.sh", "ml", ""),  # the team's line in /etc/crontab
        ("cron", "*/15 9-17 * * mon-fri", "python3", "ml", ""),  # past `nice -n 10`; CRON_TZ: see below
        ("cron", "30 2 * * *", "python3", "ana", ""),  # past `cd /home/ana &&`
        ("cron", "@reboot", "start-notebook.sh", "ana", ""),
        ("cron", "@daily", "sync.sh", "ana", ""),  # past flock and its lock file
        ("cron", "0 */6 1-15/2 jan-jun *", "bash", "bob", ""),  # RHEL's spool; past env and its settings
        ("timer", "Mon..Fri *-*-* 22:00:00; Sat,Sun *-*-* 10:00:00", "nightly-train.service", "", ""),
        ("timer", "OnUnitActiveUSec=1d", "model-sync.service", "", ""),
        ("at", "", "python3", "ana", ""),  # its script's first program, past at's preamble and `cd`
        ("at", "", "", "root", ""),  # its script could not be read: its time still counts
    }
    assert not [s for s in SECRETS if s in output]
    by_program = {j["c"]: j for j in jobs["list"]}
    assert by_program["nightly-train.service"]["n"] == pytest.approx(time.time() + 7200, abs=60)  # systemd's own
    assert "n" not in by_program["model-sync.service"]  # systemd has no next elapse for it now
    assert sorted(j["n"] for j in jobs["list"] if j["k"] == "at") == schedules["at"]
    assert jobs["found"] == 10
    assert jobs["tz"] == "UTC"  # no /etc/localtime: glibc's UTC
    assert job_errors(output) == []
    assert "--output=json" in (schedules["tmp"] / "systemctl-args").read_text()


def test_the_systems_own_jobs_are_counted_and_left_out_as_the_parameter_lists_them(schedules: dict[str, Any]) -> None:
    jobs = jobs_of(run_check(schedules))
    # Ubuntu's four run-parts lines, e2scrub_all's two, popularity-contest's, apt-daily.timer.
    assert jobs["sys"] == 8
    assert not [j for j in jobs["list"] if j["c"] in ("run-parts", "cron.daily", "e2scrub_all", "apt-daily.service")]
    everything = jobs_of(run_check(schedules, services="amazon-ssm-agent.service"))  # a list without them
    assert everything["sys"] == 0
    assert {j["c"] for j in everything["list"]} >= {
        "cron.hourly",
        "cron.daily",
        "cron.weekly",
        "cron.monthly",
        "e2scrub_all",
        "e2scrub_all_cron",
        "popularity-contest",
        "apt-daily.service",
    }


def test_cron_tz_is_reported_only_where_the_cron_daemon_honours_it(schedules: dict[str, Any]) -> None:
    # cronie (RHEL, Amazon Linux) reads a crontab's times in CRON_TZ; Debian's cron runs every job on the
    # machine's clock, CRON_TZ or not.
    crond = schedules["fake"] / "usr" / "sbin" / "crond"
    crond.parent.mkdir(parents=True)
    crond.write_text("")  # cronie's daemon
    honoured = jobs_of(run_check(schedules))
    assert {j["c"]: j.get("z") for j in honoured["list"] if j["k"] == "cron"}["python3"] in (None, "America/New_York")
    assert [j["z"] for j in honoured["list"] if "z" in j] == ["America/New_York"]
    crond.unlink()  # Debian's is /usr/sbin/cron
    ignored = jobs_of(run_check(schedules))
    assert [j for j in ignored["list"] if "z" in j] == []


@pytest.mark.parametrize(
    ("localtime", "timezone", "zone"),
    [
        ("../usr/share/zoneinfo/Europe/Berlin", "Etc/UTC", "Europe/Berlin"),  # the link is what glibc reads
        ("/usr/share/zoneinfo/posix/America/New_York", None, "America/New_York"),
        (None, "Asia/Kolkata\n", "Asia/Kolkata"),
        ("a copied file", None, ""),  # a file, not a link, and no /etc/timezone: the check cannot tell
        (None, None, "UTC"),  # no /etc/localtime at all: glibc's UTC
    ],
)
def test_the_machines_zone_is_its_localtime_link_else_its_timezone_file(
    machine: dict[str, Any], localtime: str | None, timezone: str | None, zone: str
) -> None:
    if localtime == "a copied file":
        (machine["etc"] / "localtime").write_bytes(b"TZif2")
    elif localtime:
        (machine["etc"] / "localtime").symlink_to(localtime)
    if timezone:
        (machine["etc"] / "timezone").write_text(timezone)
    assert jobs_of(run_check(machine))["tz"] == zone


def test_timers_are_read_from_systemctls_table_where_it_has_no_json_output(schedules: dict[str, Any]) -> None:
    (schedules["tmp"] / "timers.json").write_text("")  # systemd 249 (Ubuntu 22.04) and older: a table
    fake(
        schedules,
        "systemctl",
        f'case "$*" in\n  *--output=json*) echo "systemctl: unrecognized option" >&2; exit 1;;\n'
        f"  *list-timers*) cat {schedules['tmp']}/timers.txt;;\n  show*) cat {schedules['tmp']}/show.txt;;\nesac\n",
    )
    rows = [  # NEXT, LEFT, LAST, PASSED, UNIT, ACTIVATES
        ("Sat 2026-11-21 18:00:00 CET", "4h 3min left", "Sat 2026-11-21 06:00:00 CET", "7h ago", "apt-daily.timer"),
        ("Mon 2026-11-23 22:00:00 CET", "2 days left", "n/a", "n/a", "nightly-train.timer"),
        ("n/a", "n/a", "n/a", "n/a", "model-sync.timer"),
    ]
    table = "".join("  ".join((*row, row[-1].replace(".timer", ".service"))) + "\n" for row in rows)
    (schedules["tmp"] / "timers.txt").write_text(table)
    jobs = jobs_of(run_check(schedules, tz="Europe/Berlin"))
    timers = {j["c"]: j for j in jobs["list"] if j["k"] == "timer"}
    assert timers["nightly-train.service"]["n"] == calendar.timegm((2026, 11, 23, 21, 0, 0))  # 22:00 CET
    assert timers["nightly-train.service"]["s"] == "Mon..Fri *-*-* 22:00:00; Sat,Sun *-*-* 10:00:00"
    assert "n" not in timers["model-sync.service"]
    assert jobs["sys"] == 8  # apt-daily.timer still the system's


def test_a_source_that_fails_is_an_error_and_the_others_are_still_read_in_the_checks_time(
    schedules: dict[str, Any],
) -> None:
    fake(schedules, "systemctl", "echo 'Failed to connect to bus: Connection refused' >&2\nexit 1\n")
    fake(schedules, "atq", "sleep 100\n")  # atd stuck on a hung NFS home
    (schedules["spool"] / "crontabs" / "carol").symlink_to("/proc/self/mem")  # a file no one can read (EIO)
    started = time.monotonic()
    output = run_check(schedules)
    assert time.monotonic() - started < 20  # atq's 5 seconds, within the check's 30
    assert sorted(job_errors(output)) == ["at: TimeoutExpired", "cron: OSError", "timers: OSError"]
    assert ("cron", "30 2 * * *", "python3", "ana", "") in listed(jobs_of(output))  # the rest still read
    assert not [e for e in job_errors(output) if e.startswith(BLINDING)]  # jobs unread hide no work going on now


def test_a_machine_without_systemd_cron_or_at_reports_no_jobs_and_no_error(machine: dict[str, Any]) -> None:
    output = run_check(machine)
    assert jobs_of(output) == {"tz": "UTC", "found": 0, "sys": 0, "list": []}
    assert job_errors(output) == []


def test_a_crowded_machines_jobs_are_cut_to_the_soonest_and_say_how_many_there_were(schedules: dict[str, Any]) -> None:
    long = "etl_предобработка_данных_模型训练_données"
    hour = (datetime.now(UTC).hour + 12) % 24  # far from now: run from 03:00 to 03:40, 03:12 tied the heartbeat's
    lines = "".join(f"{m} {hour} * * * /opt/{long}{m}.sh --secret=s3cr3t\n" for m in range(40))
    (schedules["spool"] / "crontabs" / "dave").write_text(lines + "* * * * * /opt/heartbeat.sh\n")
    output = run_check(schedules)
    line = output.strip().splitlines()[-1]
    assert len(line) <= RUN_COMMAND_OUTPUT - 100, len(line)
    jobs = jobs_of(output)
    assert jobs["found"] == 51
    assert 1 <= len(jobs["list"]) < 51
    read = parse_report(line).jobs
    assert read is not None
    assert cut(read) == 51 - len(jobs["list"])
    now = datetime.fromtimestamp(json.loads(line)["at"], UTC)  # the check's own clock, which ordered its jobs
    upcoming = next_job(read, now)
    assert upcoming is not None
    assert upcoming.when - datetime.now(UTC) < timedelta(minutes=2)
    # The soonest first: the heartbeat runs every minute. Other jobs of the fixture tie it in some minutes (the
    # team's */15 job on weekdays from 09:00 to 17:45 on this machine's clock, ana's 02:30, the 05:00 run), and
    # the check lists a tie in the order it read the jobs: the first listed is due the same minute as the heartbeat.
    heartbeat = next(j for j in read.jobs if j.command == "heartbeat.sh")
    assert next_run(read.jobs[0], now, read.zone) == next_run(heartbeat, now, read.zone) == upcoming.when
