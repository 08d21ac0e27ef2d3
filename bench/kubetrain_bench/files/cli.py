"""Hostile files benchmark: 10,000 generated files and streams through kubetrain's doors.

Every case of :mod:`kubetrain_bench.files.generator` (seeded) goes through ``kubetrain
convert``, ``render`` and ``submit`` (no cluster: a kubeconfig whose server is not there), the
client's ``create_from_file`` and the shared reader, each case in a child process of its own
(:mod:`kubetrain_bench.files.runner`). No cluster is needed.

Prints the outcomes by door, the time of each door (p50/p99/max), the peak RSS of a case's
process, the error lines per refusal, and every problem: a traceback, an exit status other
than 0 or 1, silence, an error line that is not ``error: FILE:LINE:COLUMN: ...`` or is past the
end of the file, a door that took more than 5 s or a process that peaked above 300 MiB, a file
that must be refused accepted, a sample refused. Exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import pathlib
import resource
import socket
import tempfile
import time

import yaml

from kubetrain_bench.console import log
from kubetrain_bench.files import doors, generator, report, runner


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--count", type=int, default=10000, help="cases (default 10000)")
    p.add_argument("--seed", type=int, default=27, help="the generator's seed (default 27)")
    p.add_argument("--json", type=pathlib.Path, help="also write the figures and the problems to this file")
    return p.parse_args(argv)


def unreachable_kubeconfig(directory: pathlib.Path) -> str:
    """A kubeconfig whose server is a local port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = directory / "kubeconfig"
    cluster = {"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path.write_text(yaml.safe_dump(config))
    return str(path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    done = 0

    def progress(r: runner.Result) -> None:
        nonlocal done
        done += 1
        for p in r.problems:
            log(f"case {r.case.index} ({r.case.label[:100]}): {p}")
        if done % 500 == 0:
            log(f"{done:,}/{args.count:,} cases, {time.perf_counter() - started:.0f}s")

    log(
        f"{args.count:,} hostile files (seed {args.seed}) through convert, render, submit, the client and the reader"
    )
    with tempfile.TemporaryDirectory(prefix="kubetrain-kubeconfig-") as directory:
        kubeconfig = unreachable_kubeconfig(pathlib.Path(directory))
        doors.warm(kubeconfig)
        baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        results = runner.run(generator.cases(args.seed, args.count), kubeconfig, progress)
    figures = report.figures(results, time.perf_counter() - started, baseline)
    figures["seed"] = args.seed
    print(report.text(figures))
    if args.json:
        args.json.write_text(report.to_json(figures))
        print(f"figures and problems written to {args.json}")
    if figures["problems"]:
        print("FAILED: see the problems above")
        return 1
    return 0
