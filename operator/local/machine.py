"""Where each replica of a local run is reached: this machine, and a port of its own.

In a cluster every pod has its own IP and every replica of a type listens on the same port;
here every replica is 127.0.0.1, so each needs a port no other replica has. The rule, the same
on every run of a job, so that a person can tell where the master listens:

- replica *k* in the framework's order (the order ranks are given in: ``Master``, then
  ``Worker`` 0, 1, ... for PyTorch) gets the port of its type — ``replicaSpecs.<type>.port``,
  else the framework's (PyTorch 23456, TensorFlow 2222, ...) — plus *k*; a number another
  replica has already taken moves on to the next free one. A PyTorch job of a Master and two
  Workers is reached at 127.0.0.1:23456, :23457 and :23458.
- with ``--free-ports`` (``Options.free_ports``), each replica gets any port nothing listens on
  when the run starts instead: for runs side by side (tests, two jobs at once).

The addresses go into the render as a :class:`~kubetrain.operator.frameworks.framework.Machine`
(:func:`addresses`): every framework's env — ``MASTER_ADDR``, ``TF_CONFIG``, the MPI hostfile,
``JAX_COORDINATOR_ADDRESS`` ... — is rendered by the same code as in a cluster, with these hosts.

:func:`taken` says, before anything starts, which of those ports something on this machine
already listens on (one ``error:`` line each). A job whose framework has a rank launcher (MPI,
Chainer) is not asked: on one machine ``mpirun`` starts every rank here, without ssh, and no
replica listens on its port.
"""

from __future__ import annotations

import contextlib
import socket

from kubetrain.api import v1beta1
from kubetrain.operator.frameworks import framework as fw_contract

__all__ = ["HOST", "addresses", "taken"]

HOST = "127.0.0.1"


def addresses(
    job: v1beta1.TrainingJob,
    fw: fw_contract.Framework,
    before: fw_contract.Machine | None = None,
    *,
    free: bool = False,
) -> fw_contract.Machine:
    """Every replica's address on this machine, by the rule above (``free``: any port nothing
    listens on now, as ``--free-ports`` asks); a replica ``before`` placed keeps its address (a
    job scaled up while it runs: the new replicas get the next ports)."""
    kept = dict(before.addresses) if before is not None else {}
    given: dict[tuple[str, int], fw_contract.Address] = {}
    used = {a.port for a in kept.values()}
    for position, r in enumerate(fw_contract.World.of(job, fw).replicas):
        at = kept.get((r.type, r.index))
        if at is None:
            port = _any_port() if free else r.port + position
            while port in used:
                port = _any_port() if free else port + 1
            used.add(port)
            at = fw_contract.Address(host=HOST, port=port)
        given[(r.type, r.index)] = at
    return fw_contract.Machine(addresses={**kept, **given})


def taken(machine: fw_contract.Machine, fw: fw_contract.Framework) -> list[str]:
    """One line per replica whose port something on this machine listens on already."""
    if fw.rank_launcher:
        return []
    found = []
    for (key, index), at in sorted(machine.addresses.items(), key=lambda kv: kv[1].port):
        if not _free(at.port):
            found.append(
                f"{key}/{index}: port {at.port} on {at.host} is taken: stop what listens there, or give "
                f"spec.replicaSpecs.{key}.port another number (each replica locally gets its type's port "
                "plus its position)"
            )
    return found


def _any_port() -> int:
    """A port nothing listens on at 127.0.0.1 now, as the system hands one out."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def _free(port: int) -> bool:
    """Whether a server could listen on ``port`` at 127.0.0.1 now (a closed connection's
    TIME_WAIT does not count: servers set SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
        with contextlib.suppress(OSError):
            s.listen(1)
            return True
    return False
