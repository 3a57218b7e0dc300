"""The run's reaper: removes what a run left when its launcher died without cleaning up (a ``SIGKILL``).

Started by :class:`distlib.engines._processes._Reaper` as a plain script
(``python _reaper.py``, standard library only: it must start fast and import
nothing of the book), in a session of its own, holding the read end of a pipe
whose write end only the launcher holds. The launcher writes ``done`` when it
has cleaned up itself; if the pipe closes without it, the launcher is gone,
and the reaper, waiting a moment for the ranks' own checks, then:

* kills every process still tagged ``DISTLIB_RUN_ID=<run id>``;
* removes the run's work folder, and the MPICH, Hydra and UCX files in
  ``/dev/shm`` and the temp folder that were not there before the run and
  that no live process holds;
* kills what still runs inside the network namespaces it was given (a mini
  cluster's) and deletes them, with their ``/etc/netns`` folders.

Arguments: one JSON object on the command line: ``run_id``, ``workdir``,
``before`` (``{folder: [names]}``), ``netns`` (names), ``etc_netns``.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

LEFTOVER = re.compile(r"^(mpich|MPICH|hydra|\.hydra|ucx)")


def tagged(run_id):
    marker = f"DISTLIB_RUN_ID={run_id}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def held(paths):
    wanted, out = set(paths), set()
    for name in os.listdir("/proc"):
        if not name.isdigit() or not wanted - out:
            continue
        try:
            with open(f"/proc/{name}/maps", errors="replace") as f:
                maps = f.read()
        except OSError:
            maps = ""
        out |= {w for w in wanted if w in maps}
    return out


def reap(job):
    for _ in range(50):
        pids = tagged(job["run_id"])
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
    if job.get("workdir"):
        shutil.rmtree(job["workdir"], ignore_errors=True)
    new = []
    for folder, before in job.get("before", {}).items():
        try:
            names = set(os.listdir(folder)) - set(before)
        except OSError:
            continue
        new += [os.path.join(folder, n) for n in names if LEFTOVER.match(n)]
    keep = held(new)
    for path in new:
        if path in keep:
            continue
        try:
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
        except OSError:
            pass
    ip = shutil.which("ip") or "/usr/sbin/ip"
    for name in job.get("netns", []):
        if os.path.exists(f"/run/netns/{name}"):
            pids = subprocess.run([ip, "netns", "pids", name], capture_output=True, text=True, timeout=30).stdout
            for pid in pids.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            subprocess.run([ip, "netns", "delete", name], capture_output=True, timeout=30)
        shutil.rmtree(os.path.join(job.get("etc_netns", "/etc/netns"), name), ignore_errors=True)


def main():
    job = json.loads(sys.argv[1])
    data = sys.stdin.buffer.read()  # until the launcher writes "done" and closes, or dies
    if data.strip() == b"done":
        return
    time.sleep(job.get("grace", 1.0))  # the ranks notice first (their launcher check, PR_SET_PDEATHSIG)
    reap(job)


if __name__ == "__main__":
    main()
