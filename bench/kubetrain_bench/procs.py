"""What /proc says of a process: its CPU time and memory; the CPU time of a whole control plane.

Nothing here imports the local cluster's code at run time: the runtime benchmark reads its own
RSS with it, in a process that must hold no more than it measures.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubetrain.devcluster import cluster as devcluster


def status_kib(pid: int | str = "self") -> dict[str, int]:
    """The ``Vm*`` lines of /proc/PID/status, in KiB: ``VmRSS``, ``VmHWM`` (the peak RSS), ..."""
    text = pathlib.Path(f"/proc/{pid}/status").read_text()
    return {line.split(":")[0]: int(line.split()[1]) for line in text.splitlines() if line.startswith("Vm")}


def rss_mib(field: str = "VmRSS") -> float:
    """This process's resident set (``VmHWM``: its peak so far), in MiB."""
    kib = status_kib()
    return kib[field] / 1024 if field in kib else float("nan")


def proc_figures(pid: int) -> dict[str, float]:
    """CPU seconds (utime + stime), peak and current RSS of a live process."""
    kib = status_kib(pid)
    # Fields after the parenthesised command name: state is the first, utime the 12th, stime the 13th.
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return {
        "cpu_seconds": (int(fields[11]) + int(fields[12])) / ticks,
        "peak_rss_mib": kib.get("VmHWM", 0) / 1024,
        "rss_mib": kib.get("VmRSS", 0) / 1024,
    }


def control_plane_cpu(c: devcluster.Cluster) -> dict[str, float]:
    """CPU seconds so far of every control-plane process, and of this benchmark (it shares the cores)."""
    out = {}
    for p in c.processes:
        if p.pid is not None and p.alive():
            out[p.name] = proc_figures(p.pid)["cpu_seconds"]
    me = os.times()
    out["benchmark"] = me.user + me.system
    return out


def cpu_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """CPU seconds each process spent between two readings of :func:`control_plane_cpu`."""
    return {name: after[name] - before.get(name, 0.0) for name in after}
