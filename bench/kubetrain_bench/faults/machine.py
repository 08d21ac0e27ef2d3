"""What a cluster leaves on this machine: read before it starts and after it stops, and compared.

Other clusters may run beside this one (the machine is shared), so only what is this cluster's
is looked at: processes whose command line names its working directory, mounts under it or in
its node network's slot, the host's end of its network (``kt-S``) and routes into its slot's
ranges, iptables rules naming them, and its cgroups (``/kubetrain/S`` in every hierarchy).
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import attrs


@attrs.frozen(kw_only=True)
class Scope:
    workdir: str
    slot: int

    def names(self) -> tuple[str, ...]:
        """Strings that only this cluster's leftovers hold."""
        s = self.slot
        return (self.workdir, f"kt-{s} ", f"kt-{s}:", f"kt-{s}@", f"10.89.{s}.", f"10.{100 + s}.")


def snapshot(scope: Scope | None = None) -> dict[str, tuple[str, ...]]:
    """This cluster's processes, mounts, interfaces and routes, iptables rules and cgroups; with no
    ``scope`` (before the cluster, whose directory and slot are not known yet), everyone's."""
    return {
        "processes": _processes(scope),
        "mounts": _matching(pathlib.Path("/proc/self/mounts").read_text(), scope),
        "interfaces": _matching(
            _run("ip", "-o", "link") + _run("ip", "-o", "addr") + _run("ip", "route"), scope
        ),
        "iptables": _matching(_run("iptables-save") if shutil.which("iptables-save") else "", scope),
        "cgroups": tuple(
            str(p)
            for p in sorted(
                pathlib.Path("/sys/fs/cgroup").glob(f"*/kubetrain/{'*' if scope is None else scope.slot}")
            )
            if p.is_dir()
        ),
    }


def _run(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False).stdout


def _matching(text: str, scope: Scope | None) -> tuple[str, ...]:
    names = ("",) if scope is None else scope.names()
    return tuple(sorted(line for line in text.splitlines() if any(n in line + " " for n in names)))


def _processes(scope: Scope | None) -> tuple[str, ...]:
    out = []
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if scope is None or scope.workdir in cmdline:
            out.append(f"{d.name} {cmdline.strip()[:200]}")
    return tuple(sorted(out))


def left(before: dict[str, tuple[str, ...]], after: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """What ``after`` holds that ``before`` did not, by kind (kinds with nothing left out)."""
    return {k: d for k, v in after.items() if (d := tuple(x for x in v if x not in set(before.get(k, ()))))}
