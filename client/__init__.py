"""kubetrain for the people who run jobs: submit, look, wait, read logs, clean up.

::

    from kubetrain import client

    with client.connect() as c:                 # KUBECONFIG, ~/.kube/config or in-cluster
        (job,) = c.create_from_file("samples/v1beta1/pytorch-ddp.yaml")
        for replica, line in c.logs(job.metadata.name, follow=True):
            print(f"{replica} | {line}")
        try:
            c.wait(job.metadata.name, "Succeeded", timeout=600)
        except client.JobFailed as e:
            print(e.reason, e.failures[-1])

A job made from a runtime the platform team installed (``c.runtimes()`` lists them) needs
only what is the trainer's own::

    job = client.submit(runtime="torch-distributed", image="ghcr.io/me/train:1",
                        command=["torchrun", "train.py"], nodes=4, env={"EPOCHS": "3"})

The same job on this machine first, every replica a process with the env the cluster would
give it and the operator's own decisions (``kubetrain run --local``)::

    run = client.run_local("samples/v1beta1/pytorch-ddp.yaml")   # run.state, run.code, run.job

Everything is synchronous and returns typed v1beta1 objects
(:mod:`kubetrain.api.v1beta1`), whatever version a job was written in. Every failure is a
:class:`Error` whose message is written for a person. The client talks to the cluster
through kr8s alone and never imports the operator's reconciler or runtime: it is what a
notebook or a pipeline step installs kubetrain for. The ``kubetrain`` command
(:mod:`kubetrain.cli`) is built on it.
"""

from kubetrain.client.errors import (
    Error,
    InvalidInput,
    InvalidKubeconfig,
    JobFailed,
    JobFinished,
    NotFound,
    Rejected,
    Unreachable,
    WaitError,
    WaitTimeout,
)
from kubetrain.client.events import Event
from kubetrain.client.local import LocalRun, run_local
from kubetrain.client.logs import LogLine
from kubetrain.client.pods import PodInfo
from kubetrain.client.runtimes import short_job
from kubetrain.client.session import Client, connect, submit

__all__ = [
    "Client",
    "Error",
    "Event",
    "InvalidInput",
    "InvalidKubeconfig",
    "JobFailed",
    "JobFinished",
    "LocalRun",
    "LogLine",
    "NotFound",
    "PodInfo",
    "Rejected",
    "Unreachable",
    "WaitError",
    "WaitTimeout",
    "connect",
    "run_local",
    "short_job",
    "submit",
]
