"""The activity check's script itself, run on this machine against a fake cgroup v2 tree and a fake journal:
what it reports of the system's own services (running, ended, ending) and of everything else, and the
busy processes it leaves out because a system service runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

from costguard.idle.activity import CpuAccount, parse_report
from testing.template import activity_check_script, template

RESOURCES = "MESSAGE_ID=ae8f7b866b0347b9af31fe1c80b127c0"  # systemd's "unit consumed resources" message


def services() -> list[str]:
    return str(template()["Parameters"]["SystemServices"]["Default"]).split(",")


@pytest.mark.parametrize(
    "unit",
    [
        "apt-daily.service",
        "apt-daily-upgrade.service",
        "unattended-upgrades.service",
        "packagekit.service",
        "snapd.service",
        "snap.amazon-ssm-agent.amazon-ssm-agent.service",
        "amazon-ssm-agent.service",
        "amazon-cloudwatch-agent.service",
        "nvidia-persistenced.service",
        "man-db.service",
        "logrotate.service",
        "fwupd-refresh.service",
        "systemd-journald.service",
        "init.scope",
    ],
)
def test_the_default_list_names_the_systems_own_services(unit: str) -> None:
    assert any(fnmatchcase(unit, p) for p in services())


@pytest.mark.parametrize(
    "unit",
    [
        "cron.service",  # cron's jobs run in its cgroup: the nightly jobs costguard must see
        "crond.service",
        "atd.service",
        "docker.service",
        "containerd.service",
        "docker-3f2a9c.scope",
        "jupyter.service",
        "run-u42.service",  # systemd-run
        "user@1000.service",
        "session-3.scope",
        "slurmd.service",
        "feature-pipeline.service",
        "systemd-nspawn@trainer.service",  # a container, in machine.slice
    ],
)
def test_the_default_list_names_nothing_that_runs_someones_jobs(unit: str) -> None:
    assert not any(fnmatchcase(unit, p) for p in services())


def cgroup(root: Path, name: str, usage_usec: int, populated: bool | None = None) -> None:
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "cpu.stat").write_text(f"usage_usec {usage_usec}\nuser_usec 1\nsystem_usec 1\n")
    if populated is not None:
        (path / "cgroup.events").write_text(f"populated {int(populated)}\nfrozen 0\n")


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, Any]:
    """A cgroup v2 machine: what ran since boot, and the journal of services that ended."""
    root = tmp_path / "cgroup"
    root.mkdir()
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
    fake = bin_dir / "journalctl"
    lines = "\n".join(json.dumps(e) for e in journal)
    fake.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/journalctl-args\ncat <<'EOF'\n{lines}\nEOF\n")
    fake.chmod(0o755)
    boot = tmp_path / "boot_id"
    boot.write_text("8d2c1f0e-boot\n")
    return {"tmp": tmp_path, "root": root, "bin": bin_dir, "boot": boot}


def run_check(
    machine: dict[str, Any], *, proc_cgroup: Path | None = None, replace: dict[str, str] | None = None
) -> str:
    script = activity_check_script()
    for old, new in (replace or {}).items():
        assert old in script
        script = script.replace(old, new)
    script = script.replace('root = "/sys/fs/cgroup/"', f'root = "{machine["root"]}/"')
    script = script.replace("/proc/sys/kernel/random/boot_id", str(machine["boot"]))
    if proc_cgroup is not None:
        script = script.replace('"/proc/%s/cgroup" % pid', f'"{proc_cgroup}/%s" % pid')
    env = {"PATH": f"{machine['bin']}:/usr/bin:/bin"}
    ran = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, check=True, env=env)
    return ran.stdout


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
    machine: dict[str, Any], tmp_path: Path, cgroup_line: str, listed: bool
) -> None:
    busy = subprocess.Popen([sys.executable, "-c", "#i22busy\nwhile True: pass"])
    try:
        cgroups = tmp_path / "proc"
        cgroups.mkdir()
        (cgroups / str(busy.pid)).write_text(cgroup_line)
        report = parse_report(run_check(machine, proc_cgroup=cgroups))
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
        cgroups = tmp_path / "proc"
        cgroups.mkdir()
        for pid in (job.pid, agent.pid):
            (cgroups / str(pid)).write_text(SSM_AGENT_CGROUP)
        report = parse_report(run_check(machine, proc_cgroup=cgroups))
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


def jupyter_server(machine: dict[str, Any], url: str) -> str:
    """The check, with one Jupyter server's runtime file, as its user's would be found."""
    runtime = machine["tmp"] / "runtime"
    runtime.mkdir(exist_ok=True)
    (runtime / "jpserver-4242.json").write_text(json.dumps({"url": url, "token": "t"}))
    return f'glob.glob("{runtime}/*server-*.json") + glob.glob('


def test_a_jupyter_server_that_is_gone_is_no_error_but_one_that_does_not_answer_is(machine: dict[str, Any]) -> None:
    import socket  # noqa: PLC0415

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{closed.getsockname()[1]}/"  # a runtime file left by a server killed
    home = 'glob.glob("/home/*/.local/share/jupyter/runtime/*server-*.json") + glob.glob('
    report = parse_report(run_check(machine, replace={home: jupyter_server(machine, gone)}))
    assert not [e for e in report.errors if e.startswith("jupyter")]
    with socket.socket() as silent:  # listening, never answering: its kernels are unknown
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        report = parse_report(run_check(machine, replace={home: jupyter_server(machine, url)}))
    assert [e for e in report.errors if e.startswith("jupyter")]
