"""The ``kubetrain`` command: its parser, and the one place failures become exit statuses.

Each group of verbs lives in a module of its own that adds its subcommands
(``register(sub, cluster_flags)``) and runs them: ``jobs`` (submit, get, list, delete),
``describe``, ``logs``, ``wait``, ``tensorboard``, ``tools`` (render, manifests,
migrate-storage: no cluster or an admin's) and ``dev`` (a local cluster).

Nothing reaches the user as a traceback. A failure is printed as ``error: ...`` lines on
standard error, perhaps with a ``next:`` line, and the command exits 1; 2 means a wait timed
out (``wait``, ``submit --wait``, ``delete --wait``), so a script can tell the two apart.
A command line that does not parse is an error too (exit 1, not argparse's 2). Ctrl-C ends
any verb with 130, as a shell reports a SIGINT, and without a word (on a terminal, a new
line for the prompt); a closed pipe
(``kubetrain logs JOB | head``) ends it quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

from kubetrain import client
from kubetrain.cli import cluster, convert, describe, dev, errors, jobs, logs, tensorboard, tools, wait

__all__ = ["main"]

VERBS = (jobs, describe, logs, wait, tensorboard, tools, convert, dev)


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is an :class:`errors.UsageError` for ``main`` to print."""

    def error(self, message: str) -> NoReturn:
        raise errors.UsageError(message, self.prog)


def parser() -> Parser:
    top = Parser(prog="kubetrain", description="Distributed training on Kubernetes.")
    sub = top.add_subparsers(required=True, metavar="COMMAND", parser_class=Parser)
    flags = cluster.flags()
    for verbs in VERBS:
        verbs.register(sub, flags)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    # kr8s warns on every connection to a Kubernetes newer than it knows: noise to a person
    # at a terminal, who can do nothing about it (the Python API leaves warnings to its caller).
    warnings.filterwarnings("ignore", category=UserWarning, module=r"kr8s\b")
    try:
        args = parser().parse_args(argv)
        return int(args.run(args))
    except errors.UsageError as e:
        _error(str(e))
        print(f"See '{e.prog} --help'.", file=sys.stderr)
        return 1
    except errors.CommandError as e:
        _error(str(e), e.hint)
        return e.code
    except client.WaitTimeout as e:
        _error(str(e))
        return 2
    except client.Error as e:
        _error(str(e))
        return 1
    except KeyboardInterrupt:
        # The terminal echoed ^C where the cursor was: the shell's prompt goes on a line of its own,
        # as after a command killed by SIGINT.
        if sys.stderr.isatty():
            print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Whoever read our output has gone: say nothing more, not even at interpreter exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:  # a file that is not there, a missing binary of the local cluster
        _error(_os_message(e))
        return 1


def _error(message: str, hint: str | None = None) -> None:
    for line in message.splitlines() or [""]:
        print(f"error: {line}", file=sys.stderr)
    if hint:
        print(f"next: {hint}", file=sys.stderr)


def _os_message(e: OSError) -> str:
    if e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)


if __name__ == "__main__":
    sys.exit(main())
