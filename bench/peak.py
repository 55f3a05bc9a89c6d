"""Run a module as `python -m` would, then write the process's peak resident memory (VmHWM) to a file.

`python bench/peak.py OUT.txt module args...`: works in any interpreter (costguard's, Custodian's). The
parent cannot use wait4's ru_maxrss: Linux carries the forking parent's high-water mark over exec.
"""

import atexit
import runpy
import sys


def _report(path: str) -> None:
    with open("/proc/self/status") as status:
        peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(str(peak_kb))


if __name__ == "__main__":
    target, module = sys.argv[1], sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    atexit.register(_report, target)
    runpy.run_module(module, run_name="__main__", alter_sys=True)
