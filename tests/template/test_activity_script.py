"""The SystemServices parameter's default: the system's own services and scheduled jobs, whose CPU and jobs the
activity check (programs/activity_check.py, tested under tests/programs) counts as the system's and not as work;
and nothing that runs someone's job."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest

from testing.template import template


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


@pytest.mark.parametrize(
    "job",
    [
        "cron:cron.daily",  # run-parts of /etc/cron.daily, named by its folder
        "cron:e2scrub_all",  # a line of /etc/cron.d by its program
        "cron:popularity-contest",  # and by its file
        "cron:sessionclean",
        "cron:php",
        "cron:certbot",
        "cron:0hourly",  # RHEL's /etc/cron.d/0hourly
        "cron:raid-check",
        "cron:sa1",
        "apt-daily.service",  # the units timers start
        "dpkg-db-backup.service",
        "ua-timer.service",
        "update-notifier-download.service",
        "snapd.snap-repair.service",
        "fstrim.service",
        "e2scrub_all.service",
        "man-db.service",
        "logrotate.service",
        "plocate-updatedb.service",
        "systemd-tmpfiles-clean.service",
        "motd-news.service",
        "sysstat-collect.service",
        "dnf-makecache.service",
        "unbound-anchor.service",
        "phpsessionclean.service",
    ],
)
def test_the_default_list_names_the_systems_own_scheduled_jobs(job: str) -> None:
    assert any(fnmatchcase(job, p) for p in services())


@pytest.mark.parametrize(
    "job", ["cron:python3", "cron:run-parts", "cron:bash", "cron:train.sh", "nightly-train.service"]
)
def test_the_default_list_names_no_teams_scheduled_job(job: str) -> None:
    assert not any(fnmatchcase(job, p) for p in services())
