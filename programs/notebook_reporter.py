# costguard notebook activity, schema 2 (see costguard's docs/sagemaker.md). Read-only on the notebook: it asks
# the notebook's own Jupyter server which kernels and terminals were active, /proc/stat how busy the busiest CPU
# core was since the last report (a job outside any kernel), and nvidia-smi how busy the GPUs are, and publishes
# them to CloudWatch (namespace costguard/SageMaker). What it cannot read, it does not publish: costguard takes a
# missing report for missing data, never for an idle notebook.
import calendar, json, os, ssl, subprocess, sys, time, urllib.request

NAMESPACE = "costguard/SageMaker"
RECENT = 330  # a kernel or terminal active in the last 5 minutes (and a half: cron's jitter) is at work
JUPYTER = os.environ.get("COSTGUARD_JUPYTER_URL", "https://localhost:8443")
METADATA = os.environ.get("COSTGUARD_METADATA", "/opt/ml/metadata/resource-metadata.json")
PROC_STAT = os.environ.get("COSTGUARD_PROC_STAT", "/proc/stat")
STATE = os.environ.get("COSTGUARD_STATE", "/tmp/costguard-activity-cpu.json")  # gone with the root volume at a stop
now = time.time()


def seconds(stamp):
    return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))


def read(path):
    context = ssl._create_unverified_context()  # the notebook's own server, on its self-signed certificate
    with urllib.request.urlopen(JUPYTER + path, context=context, timeout=10) as answer:
        return json.load(answer)


def kernel_activity():
    """1 if a kernel is busy or was active lately, or a terminal was used; 0 if none; None if unreadable."""
    try:
        kernels, terminals = read("/api/kernels"), read("/api/terminals")
    except Exception as exc:
        print("costguard: Jupyter not readable: %s" % type(exc).__name__)
        return None
    for kernel in kernels:
        if kernel.get("execution_state") in ("busy", "starting"):
            return 1
        if now - seconds(kernel.get("last_activity", "1970-01-01T00:00:00")) < RECENT:
            return 1
    for terminal in terminals:
        if now - seconds(terminal.get("last_activity", "1970-01-01T00:00:00")) < RECENT:
            return 1
    return 0


def core_times():
    """Each core's (busy, total) jiffies since boot; idle and iowait are not work."""
    times = {}
    with open(PROC_STAT) as f:
        for line in f:
            fields = line.split()
            if len(fields) > 5 and fields[0].startswith("cpu") and fields[0] != "cpu":
                values = [int(v) for v in fields[1:9]]
                times[fields[0]] = [sum(values) - values[3] - values[4], sum(values)]
    return times


def busiest_core():
    """The busiest core's use since the previous report (5 minutes), in percent; the first report after a start
    measures one second. None if /proc/stat cannot be read."""
    try:
        current = core_times()
        try:
            with open(STATE) as f:
                saved = json.load(f)
            before = saved["cores"] if 0 < now - saved["at"] < 900 else None
        except (OSError, ValueError, KeyError, TypeError):
            before = None
        with open(STATE, "w") as f:
            json.dump({"at": now, "cores": current}, f)
        if not before:
            time.sleep(1)
            before, current = current, core_times()
        shares = [
            100.0 * (busy - before[core][0]) / (total - before[core][1])
            for core, (busy, total) in current.items()
            if core in before and total > before[core][1]
        ]
    except (OSError, ValueError, IndexError, TypeError) as exc:
        print("costguard: /proc/stat not readable: %s" % type(exc).__name__)
        return None
    return max(shares) if shares else None


def gpu_utilization():
    try:
        listed = subprocess.run(
            ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20, universal_newlines=True,
        )
        values = [float(line) for line in listed.stdout.split() if line.strip().replace(".", "", 1).isdigit()]
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        print("costguard: nvidia-smi not readable: %s" % type(exc).__name__)
        return None
    return max(values) if values else None


def main():
    try:
        with open(METADATA) as f:
            metadata = json.load(f)
        name, region = metadata["ResourceName"], metadata["ResourceArn"].split(":")[3]
    except (OSError, ValueError, KeyError, IndexError) as exc:
        print("costguard: not on a notebook instance (%s)" % type(exc).__name__)
        return
    dimensions = [{"Name": "NotebookInstanceName", "Value": name}]
    data = []
    for metric, value, unit in (
        ("KernelActivity", kernel_activity(), "Count"),
        ("BusiestCoreUtilization", busiest_core(), "Percent"),
        ("GPUUtilization", gpu_utilization(), "Percent"),
    ):
        if value is not None:
            data.append({"MetricName": metric, "Dimensions": dimensions, "Value": value, "Unit": unit})
    if "--print" in sys.argv:
        print(json.dumps({"Namespace": NAMESPACE, "Region": region, "MetricData": data}))
        return
    if data:
        import boto3

        boto3.client("cloudwatch", region_name=region).put_metric_data(Namespace=NAMESPACE, MetricData=data)


main()
