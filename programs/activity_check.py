import calendar, datetime, fnmatch, glob, json, os, re, subprocess, time, urllib.request

# The system's own services (the SystemServices parameter): their CPU is not work.
SYSTEM = [p.strip() for p in "${SystemServices}".split(",") if p.strip()]
now = time.time()
out = {"v": 1, "at": int(now), "sessions": [], "kernels": [], "kp": 0, "cpu": [], "gpu": [], "hook": None, "errors": []}
# costguard waits ActivityCheckSeconds (45 by default) for the answer, SSM kills the check at 60:
# every step that may hang (nvidia-smi, journalctl, Jupyter, the hook) shares this much.
DEADLINE_SECONDS = 30
deadline = now + DEADLINE_SECONDS
# ListCommandInvocations returns the first 2,500 characters of the output: the report is cut
# to fit (its jobs to the soonest, its lists shortest first, then its names), never its GPUs or its
# CPU account.
LIMIT = 2300


def run(args, seconds, env=None):
    # (exit code, stdout); a command past its time is killed and not waited for (a process stuck
    # in a driver cannot be reaped); none is started once the check's time is up.
    left = deadline - time.time()
    if left < 1:
        raise subprocess.TimeoutExpired(args, 0)
    child = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, env=env
    )
    try:
        stdout, _ = child.communicate(timeout=min(seconds, left))
    except subprocess.TimeoutExpired:
        child.kill()
        raise
    return child.returncode, stdout


def command_of(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        return ""
    return " ".join(" ".join(w.decode("utf-8", "replace") for w in words if w).split())


def name_of(pid):
    text = command_of(pid)
    notebook = "ipykernel" in text or "jupyter" in text
    return (os.path.basename(text.split(" ")[0]) + " " + " ".join(text.split(" ")[1:3])).strip()[:40], notebook


# A notebook kernel's process, whether or not a Jupyter server lists it (VS Code starts its own):
# ipykernel, or any kernel started with its connection file (IRkernel, IJulia...).
KERNEL = re.compile(r"ipykernel|kernel-[^/ ]*\.json")


def system(unit):
    return any(fnmatch.fnmatchcase(unit, pattern) for pattern in SYSTEM)


# The SSM agent's service holds what it runs for people too: Session Manager shells and Run
# Command jobs live in its cgroup (its unit has KillMode=process so that they outlive a restart
# of the agent). There, only the agent's own programs are the system's.
AGENT_UNITS = ("amazon-ssm-agent.service", "snap.amazon-ssm-agent.*")
AGENT_PROGRAMS = ("amazon-ssm-agent", "ssm-agent-worker")  # long-lived: their CPU adds up


def agent(unit):
    return any(fnmatch.fnmatchcase(unit, pattern) for pattern in AGENT_UNITS)


def program_of(pid):
    # The process's executable (not its argv, which it may set to anything).
    try:
        return os.path.basename(os.readlink("/proc/%s/exe" % pid)).replace(" (deleted)", "")
    except OSError:
        return ""


def systems_own(pid, unit):
    if not system(unit):
        return False
    return not agent(unit) or program_of(pid) in AGENT_PROGRAMS + ("ssm-document-worker",)


def unit_of(pid):
    # A process's systemd unit: its cgroup under system.slice (or PID 1's init.scope); "" for the rest.
    try:
        with open("/proc/%s/cgroup" % pid) as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[1] in ("", "name=systemd"):
            path = parts[2].split("/")
            if len(path) > 2 and path[1] == "system.slice":
                return path[2]
            if parts[2] == "/init.scope":
                return "init.scope"
    return ""


# Interactive sessions: a terminal's last input is its device's access time.
for dev in glob.glob("/dev/pts/[0-9]*"):
    try:
        out["sessions"].append({"tty": dev[5:], "idle_s": int(max(0, now - os.stat(dev).st_atime))})
    except OSError:
        pass

# Processes busy on a CPU core over a 3-second sample, but the system's own services'.
def ticks():
    seen = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            seen[stat.split("/")[2]] = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return seen

hz = os.sysconf("SC_CLK_TCK")
before, start = ticks(), time.time()
time.sleep(3)
after, elapsed = ticks(), time.time() - start
me = str(os.getpid())
busy = []
for pid, used in after.items():
    if pid == me or pid not in before:
        continue
    share = 100.0 * (used - before[pid]) / hz / elapsed
    if share >= 5 and not systems_own(pid, unit_of(pid)):
        name, notebook = name_of(pid)
        busy.append({"name": name, "cpu": round(share, 1), "notebook": notebook})
out["cpu"] = sorted(busy, key=lambda p: -p["cpu"])[:8]
out["kp"] = sum(1 for pid in after if pid != me and KERNEL.search(command_of(pid)))

# Every process holding GPU memory, and each GPU's utilization and memory used.
try:
    code, listed = run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"], 20)
    if code != 0:
        raise OSError("processes unreadable")  # GPUs whose processes are unknown: not reported
    for line in listed.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            name, notebook = name_of(parts[0])
            mib = int(parts[1]) if parts[1].isdigit() else 0
            out["gpu"].append({"name": name, "mib": mib, "notebook": notebook})
    out["gpu"] = sorted(out["gpu"], key=lambda p: -p["mib"])[:8]
    code, gpus = run(["nvidia-smi", "--query-gpu=index,utilization.gpu,memory.used", "--format=csv,noheader,nounits"], 20)
    rows = [[p.strip() for p in line.split(",")] for line in gpus.splitlines() if line.strip()]
    if code == 0 and rows and all(len(r) == 3 and all(p.isdigit() for p in r) for r in rows):
        out["gpus"] = [{"i": int(r[0]), "u": int(r[1]), "m": int(r[2])} for r in rows[:16]]
    else:
        out["errors"].append("nvidia-smi: GPUs unreadable")
except (OSError, subprocess.SubprocessError) as exc:
    out.pop("gpus", None)
    out["errors"].append("nvidia-smi: %s" % type(exc).__name__)

# cgroup v2's CPU accounting since boot (cumulative, processes that exited included): every
# top-level cgroup's, and the system's own services' (running ones from their cgroups, ended
# ones from what systemd logged when they ended). cgroup v1 hosts say so, and nothing more.
def usage_us(path):
    try:
        with open(path + "cpu.stat") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None

def agent_us(path):
    # The SSM agent's own long-lived processes' CPU: the rest of its cgroup ran for people. A
    # restarted agent's count starts again, which attributes nothing until the next answer.
    used = 0
    try:
        with open(path + "cgroup.procs") as f:
            pids = f.read().split()
    except OSError:
        return 0
    for pid in pids:
        if program_of(pid) in AGENT_PROGRAMS:
            try:
                with open("/proc/%s/stat" % pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                used += (int(fields[11]) + int(fields[12])) * 1000000 // hz
            except (OSError, IndexError, ValueError):
                pass
    return used

root = "/sys/fs/cgroup/"
if os.path.exists(root + "cgroup.controllers"):
    try:
        stamp = int(time.time() * 1e6)
        total = sum(u for u in (usage_us(p) for p in glob.glob(root + "*/")) if u is not None)
        ours = 0
        # Every listed unit in system.slice, template instances in their sub-slices too (as
        # the journal will count each once it ends), and PID 1.
        paths = [root + "init.scope/"]
        for parent, dirs, _ in os.walk(root + "system.slice"):
            paths += [os.path.join(parent, d) + "/" for d in dirs if system(d)]
            dirs[:] = [d for d in dirs if not system(d)]
        for path in paths:
            unit = path.rstrip("/").rsplit("/", 1)[1]
            if system(unit) and agent(unit):
                ours += agent_us(path)
            elif system(unit):
                with open(path + "cgroup.events") as f:
                    populated = "populated 1" in f.read()
                used = usage_us(path)
                if populated and used is not None:
                    ours += used  # an emptied one is ending: its figure is (or will be) logged
        code, ended = run(
            ["journalctl", "-b", "-q", "-o", "json", "--no-pager", "--output-fields=UNIT,CPU_USAGE_NSEC",
             "MESSAGE_ID=ae8f7b866b0347b9af31fe1c80b127c0"],
            15,
        )
        if code != 0:
            raise OSError("journalctl failed")
        for line in ended.splitlines():
            entry = json.loads(line)
            nsec, unit = str(entry.get("CPU_USAGE_NSEC", "")), str(entry.get("UNIT", ""))
            ended_before = int(entry.get("__REALTIME_TIMESTAMP", stamp)) < stamp
            if nsec.isdigit() and system(unit) and not agent(unit) and ended_before:
                ours += int(nsec) // 1000
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        out["cg"] = {"v": 2, "boot": boot, "top": round(total / 1e6, 1), "sys": round(ours / 1e6, 1)}
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        out["cg"] = {"v": 2}
        out["errors"].append("cgroup: %s" % type(exc).__name__)
else:
    out["cg"] = {"v": 1}

# Jupyter kernels, from every local Jupyter server's runtime file.
for path in glob.glob("/home/*/.local/share/jupyter/runtime/*server-*.json") + glob.glob(
    "/root/.local/share/jupyter/runtime/*server-*.json"
):
    try:
        if deadline - time.time() < 1:
            raise subprocess.TimeoutExpired("jupyter", 0)
        with open(path) as f:
            server = json.load(f)
        url = server["url"].rstrip("/") + "/api/kernels?token=" + server.get("token", "")
        with urllib.request.urlopen(url, timeout=min(3, deadline - time.time())) as answer:
            for kernel in json.load(answer)[:10]:
                last = kernel.get("last_activity", "")
                try:
                    seen = calendar.timegm(time.strptime(last[:19], "%Y-%m-%dT%H:%M:%S"))
                    idle = int(max(0, now - seen))
                except ValueError:
                    idle = 0
                out["kernels"].append({"state": kernel.get("execution_state", ""), "idle_s": idle})
    except Exception as exc:
        if isinstance(getattr(exc, "reason", exc), ConnectionRefusedError):
            continue  # nothing listens there: a runtime file left by a server that is gone
        out["errors"].append("jupyter: %s" % type(exc).__name__)

# The owner's own rule: exit 0 means keep, its first line is the reason.
hook = "/etc/costguard/keep-alive"
if os.access(hook, os.X_OK):
    try:
        code, said = run([hook], 20)
        out["hook"] = {"exit": code, "line": (said.splitlines() or [""])[0][:200]}
    except (OSError, subprocess.SubprocessError) as exc:
        out["hook"] = {"exit": -1, "line": "hook failed: %s" % type(exc).__name__}
        out["errors"].append("hook: %s" % type(exc).__name__)  # its owner's word is unknown

# The machine's own scheduled jobs (`jobs`, additive): every crontab line (each user's, /etc/crontab,
# /etc/cron.d), active systemd timer and at job, with its schedule as written and the name of the program
# it runs, never its arguments (they may hold secrets). The system's own are counted, not listed: a timer
# whose unit or the unit it starts is in SYSTEM, a line of /etc/crontab or /etc/cron.d whose program or
# file is there as cron:<name>; a user's crontab is always someone's. Read last: its errors come after
# those that blind the check, and it has what is left of the check's time.
ETC = "/etc/"
SPOOL = "/var/spool/cron/"
SYSTEMD = "/run/systemd/system"
CRONIE = os.path.exists("/usr/sbin/crond") or os.path.exists("/sbin/crond")  # honours CRON_TZ; Debian's cron does not
C_LOCALE = dict(os.environ, LC_ALL="C")  # English day and month names in the dates systemctl and atq print
MAX_JOBS = 20
WORDS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
         "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
NAMES = dict((n, i) for i, n in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1))
NAMES.update((n, i) for i, n in enumerate("sun mon tue wed thu fri sat".split()))
# Words before a command's program: those that only test or prepare (a piece starting with one runs
# nothing worth naming), and those that run the rest (their options are passed over).
TESTS = ("test", "[", "[[", "cd", "true", ":", ".", "source", "fi", "else", "done", "esac", "exit", "export", "umask", "sleep")
WRAPPERS = ("exec", "nice", "ionice", "nohup", "time", "env", "setsid", "chronic", "command", "sudo", "flock",
            "timeout", "if", "then", "do", "while", "until", "!")
VALUED = {"nice": ("-n",), "ionice": ("-c", "-n"), "sudo": ("-u", "-g"), "timeout": ("-s", "-k"), "flock": ("-w", "-E")}


def program(command):
    # The name of the program a cron line or an at job runs; "" when none can be told.
    command = re.split(r"(?<!\\)%", command, maxsplit=1)[0]  # cron: what follows an unescaped % is the job's input
    for piece in re.split(r"&&|\|\||;|\|", command):
        words = re.sub(r"[(){}]", " ", piece).split()
        while words:
            word = os.path.basename(words[0].strip("'\""))
            if word in TESTS or (word == "command" and words[1:2] in (["-v"], ["-V"])):
                words = []  # a piece that only tests or prepares (`command -v x` asks whether x exists)
            elif re.match(r"^[A-Za-z_][A-Za-z0-9_]*=|^[0-9.]+[smhd]?$", words[0]):
                words = words[1:]  # a variable set for the command, or a wrapper's number
            elif word in WRAPPERS:
                words = words[1:]
                while words and words[0].startswith("-"):
                    words = words[2:] if words[0] in VALUED.get(word, ()) else words[1:]
                words = words[1:] if word == "flock" else words  # flock's lock file
            else:
                folders = [w for w in words[1:] if not w.startswith("-")]
                if word == "run-parts" and folders and folders[-1].startswith("/etc/cron."):
                    word = os.path.basename(folders[-1].rstrip("/"))  # the system's cron.daily and its like
                return word[:40]
    return ""


def ignored(name):
    # What cron itself passes over in its folders: hidden files, editors' and package managers' leftovers.
    return re.search(r"^\.|~$|\.(dpkg-|rpm|ucf-)|\.(swp|bak|orig|disabled)$", name) is not None


def crontab(path, user):
    # Each job line of a crontab; a user of None: a system crontab, whose lines name their user.
    found, zone = [], ""
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    for line in lines[:1000]:
        line = line.strip()
        setting = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$", line)
        if setting:
            zone = setting.group(2).strip().strip("'\"") if setting.group(1) == "CRON_TZ" else zone
            continue
        fields = 1 if line.startswith("@") else 5
        words = line.split(None, fields + (0 if user else 1))
        if line.startswith("#") or len(words) < fields + (1 if user else 2):
            continue
        job = {"k": "cron", "s": " ".join(words[:fields])[:80], "c": program(words[-1]), "u": (user or words[fields])[:32]}
        if zone and CRONIE:
            job["z"] = zone[:40]
        found.append(job)
    return found


def soon(schedule):
    # A cron line's next run within 8 days on the machine's clock, or None: for the order of the list only
    # (costguard computes the real one, in the job's zone).
    fields = WORDS.get(schedule.lower(), schedule).split()
    if len(fields) != 5:
        return None
    def number(text):
        return NAMES[text.lower()] if text.lower() in NAMES else int(text)

    sets = []
    for text, low, high in zip(fields, (0, 0, 1, 1, 0), (59, 23, 31, 12, 7)):
        values = set()
        for item in text.split(","):
            body, _, step = item.partition("/")
            first, _, last = body.partition("-")
            span = (low, high) if body == "*" else (number(first), number(last or first))
            values.update(range(span[0], span[1] + 1, int(step or 1)))
        sets.append(values)
    minutes, hours, days, months, weekdays = sets
    weekdays = set(d % 7 for d in weekdays)
    either = not fields[2].startswith("*") and not fields[4].startswith("*")
    start = datetime.datetime.fromtimestamp(now)
    for ahead in range(8):
        day = (start + datetime.timedelta(days=ahead)).date()
        by_date, by_weekday = day.day in days, day.isoweekday() % 7 in weekdays
        if day.month in months and ((by_date or by_weekday) if either else (by_date and by_weekday)):
            for hour in sorted(hours):
                for minute in sorted(minutes):
                    run_at = datetime.datetime(day.year, day.month, day.day, hour, minute)
                    if run_at > start:
                        return time.mktime(run_at.timetuple())
    return None


def timers():
    # The active timers (an inactive one never elapses): its unit, the unit it starts, systemd's next elapse.
    if not os.path.isdir(SYSTEMD):
        return []  # not booted with systemd: no timers
    listed = []
    code, text = run(["systemctl", "list-timers", "--no-pager", "--output=json"], 10, C_LOCALE)
    try:
        rows = json.loads(text) if code == 0 else None
    except ValueError:
        rows = None
    if isinstance(rows, list):
        for row in [r for r in rows if isinstance(r, dict)]:
            starts, usec = row.get("activates"), row.get("next")
            starts = (starts or [""])[0] if isinstance(starts, list) else starts
            listed.append((str(row.get("unit") or ""), str(starts or ""), usec // 1000000 if isinstance(usec, int) and usec > 0 else None))
        return listed
    # A systemd without JSON output (before 2021 or so): its table, the next elapse on the machine's clock.
    code, text = run(["systemctl", "list-timers", "--no-pager", "--no-legend"], 10, C_LOCALE)
    if code != 0:
        raise OSError("systemctl list-timers failed")
    for line in text.splitlines():
        words = line.split()
        units = [i for i, w in enumerate(words) if w.endswith(".timer")]
        if units:
            when = re.match(r"^\w{3} (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})", line)
            elapse = int(time.mktime(time.strptime(when.group(1), "%Y-%m-%d %H:%M:%S"))) if when else None
            listed.append((words[units[-1]], " ".join(words[units[-1] + 1:units[-1] + 2]), elapse))
    return listed


def calendars(units):
    # Each timer's OnCalendar as systemd normalised it ("; " between several), else its monotonic settings.
    code, text = run(["systemctl", "show", "--no-pager", "-p", "Id", "-p", "TimersCalendar", "-p", "TimersMonotonic"] + units, 10, C_LOCALE)
    if code != 0:
        raise OSError("systemctl show failed")
    found = {}
    for block in text.split("\n\n"):
        unit, calendar, monotonic = "", [], []
        for line in block.splitlines():
            key, _, value = line.partition("=")
            spec = re.match(r"^\{ (\w+)=(.*?) ; ", value)
            if key == "Id":
                unit = value
            elif key == "TimersCalendar" and spec:
                calendar.append(spec.group(2))
            elif key == "TimersMonotonic" and spec:
                monotonic.append(spec.group(1) + "=" + spec.group(2))
        found[unit] = "; ".join(calendar or monotonic)
    return found


def at_jobs():
    # The at queue: each job's time (atq prints it on the machine's clock) and its script's first program.
    code, text = run(["atq"], 5, C_LOCALE)
    if code != 0:
        raise OSError("atq failed")
    found = []
    for line in text.splitlines()[:MAX_JOBS]:
        job = re.match(r"^(\d+)\s+(.+?)\s+(\S)\s+(\S+)\s*$", line)
        if not job or job.group(3) == "=":
            continue  # queue "=": running now, its processes are in the report
        when = None
        for form in ("%a %b %d %H:%M:%S %Y", "%Y-%m-%d %H:%M"):
            try:
                when = int(time.mktime(time.strptime(job.group(2), form)))
                break
            except ValueError:
                pass
        if when is None:
            failed.add("at: a time unreadable")
            continue
        code, script = run(["at", "-c", job.group(1)], 5, C_LOCALE)
        lines = script.splitlines() if code == 0 else []
        body = [i for i, l in enumerate(lines) if "marcinDELIMITER" in l][:1]  # at's heredoc holds the commands
        names = [program(l) for l in lines[body[0] + 1:] if not l.lstrip().startswith("#") and "marcinDELIMITER" not in l] if body else []
        found.append({"k": "at", "n": when, "c": next((n for n in names if n), ""), "u": job.group(4)[:32]})
    return found


def machine_zone():
    # The zone cron and atq tell time in: /etc/localtime's link, else /etc/timezone; UTC without
    # /etc/localtime (as glibc); "" when it cannot be told.
    try:
        link = os.readlink(ETC + "localtime")
        if "zoneinfo/" in link:
            return re.sub(r"^(posix|right)/", "", link.split("zoneinfo/", 1)[1])[:60]
    except OSError:
        pass
    try:
        with open(ETC + "timezone") as f:
            name = f.read().strip()
        if name:
            return name[:60]
    except OSError:
        pass
    return "" if os.path.exists(ETC + "localtime") else "UTC"


jobs, listed, failed = {"tz": machine_zone(), "found": 0, "sys": 0, "list": []}, [], set()
out["jobs"] = jobs


def count(job, systems):
    if systems:
        jobs["sys"] += 1
    else:
        listed.append(job)
        if job["u"] == "":
            del job["u"]


tables = [(p, os.path.basename(p)) for p in glob.glob(SPOOL + "crontabs/*") + glob.glob(SPOOL + "*")]
tables += [(p, None) for p in [ETC + "crontab"] + glob.glob(ETC + "cron.d/*")]
for path, user in sorted(tables, key=lambda t: t[0]):
    name = os.path.basename(path)
    if not os.path.isfile(path) or ignored(name):
        continue
    try:
        for job in crontab(path, user):
            mine = user is None and (system("cron:" + job["c"]) or (path != ETC + "crontab" and system("cron:" + name)))
            count(job, mine)
    except (OSError, ValueError) as exc:
        failed.add("cron: %s" % type(exc).__name__)  # e.g. not root: PermissionError
try:
    found = timers()
except (OSError, ValueError, subprocess.SubprocessError) as exc:
    found = []
    failed.add("timers: %s" % type(exc).__name__)
try:
    schedules = calendars([unit for unit, _, _ in found][:100]) if found else {}
except (OSError, ValueError, subprocess.SubprocessError) as exc:
    schedules = {}
    failed.add("timers: %s" % type(exc).__name__)
for unit, starts, elapse in found:
    job = {"k": "timer", "s": schedules.get(unit, "")[:80], "c": (starts or unit)[:40], "u": ""}
    if elapse:
        job["n"] = elapse
    count(job, system(unit) or system(starts))
try:
    for job in at_jobs():
        count(job, False)
except FileNotFoundError:
    pass  # at is not installed: no at queue
except (OSError, ValueError, subprocess.SubprocessError) as exc:
    failed.add("at: %s" % type(exc).__name__)


def soonest(job):
    if job.get("n") or job["k"] != "cron":
        return job.get("n")
    try:
        return soon(job["s"])
    except (ValueError, OverflowError):
        return None


keys = [soonest(job) for job in listed]
order = sorted(range(len(listed)), key=lambda i: (keys[i] is None, keys[i] or 0, i))
jobs["found"], jobs["list"] = len(listed), [listed[i] for i in order][:MAX_JOBS]
out["errors"] += sorted(failed)

out["sessions"] = sorted(out["sessions"], key=lambda s: s["idle_s"])[:10]
out["kernels"] = sorted(out["kernels"], key=lambda k: (k["state"] != "busy", k["idle_s"]))
out["errors"] = out["errors"][:5]


def fits():
    return len(json.dumps(out, separators=(",", ":"))) <= LIMIT


# Cut to fit: the jobs first, to the 5 soonest (`found` says how many there were); then the longest
# lists (each keeps its first, the one that decides: the freshest input, a busy kernel, the busiest
# process, the most GPU memory, the soonest job), then the names.
while not fits() and len(jobs["list"]) > 5:
    jobs["list"].pop()
for keep in (5, 3, 1):
    for key in ("kernels", "sessions", "gpu", "cpu", "errors"):
        if not fits():
            out[key] = out[key][:keep]
    if not fits():
        jobs["list"] = jobs["list"][:keep]
for size in (20, 8, 0):
    if fits():
        break
    for item in out["cpu"] + out["gpu"]:
        item["name"] = item["name"][:size]
    for job in jobs["list"]:
        job["c"] = job["c"][:size]
    if out["hook"]:
        out["hook"]["line"] = out["hook"]["line"][:size]
    out["errors"] = [e[: max(size, 12)] for e in out["errors"]]  # "nvidia-smi: " stays
print(json.dumps(out, separators=(",", ":")))
