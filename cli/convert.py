"""``kubetrain convert``: an old operator's job file, written as TrainingJobs.

``kubetrain convert FILE`` (``-``: standard input) reads every document of FILE — the first
operators' TfJob, MXJob, Caffe2Job and ChainerJob as their documentation printed them,
Kubeflow v1's kinds, MPI Operator's MPIJob, Kubeflow Trainer v2's TrainJob and runtimes, or a
TrainingJob of either version — and prints v1beta1 TrainingJobs (and runtimes), ready for
``kubectl apply -f -``. Whatever a TrainingJob does not carry over is a
``warning: FILE:LINE: path: message`` line on standard error; input it cannot read is an error
with its line and field path, and nothing is printed.
``--to APIVERSION/KIND`` writes TrainingJobs back as an old kind, where it can express them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kubetrain.cli import errors, output

__all__ = ["arguments"]


def arguments(_verb: str, p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="YAML with one or more jobs of an old kind, or TrainingJobs; - for stdin")
    p.add_argument(
        "--to",
        metavar="APIVERSION/KIND",
        help="instead, write TrainingJobs as this old kind, e.g. kubeflow.org/v1/PyTorchJob",
    )
    p.set_defaults(run=_convert)


def _convert(args: argparse.Namespace) -> int:
    from kubetrain.api import documents, validation
    from kubetrain.convert import document

    try:
        docs = documents.load(args.file)
    except documents.DocumentError as e:
        raise errors.CommandError(str(e)) from None
    out: list[dict[str, Any]] = []
    warnings: list[str] = []
    for doc in docs:
        try:
            converted = document.convert(doc.data)
            if args.to and converted.job is None:
                raise errors.CommandError(f"{doc.where(())}: --to writes TrainingJobs only")
            if args.to and converted.job is not None:
                out.append(document.back(converted.job, *_target(args.to)))
            else:
                # Plain JSON data: the encoded job holds enums, which YAML's safe dumper refuses.
                out.append(json.loads(json.dumps(converted.encoded())))
        except validation.ValidationError as e:
            raise errors.CommandError(str(doc.explain(e))) from None
        warnings += [
            f"warning: {doc.where(n.path)}: {validation.format_path(n.path)}: {n.message}"
            for n in converted.notes
        ]
    for line in warnings:
        print(line, file=sys.stderr)
    output.yaml_documents(out, sys.stdout)
    return 0


def _target(to: str) -> tuple[str, str]:
    api_version, _, kind = to.rpartition("/")
    if not api_version or not kind:
        raise errors.CommandError(f"--to {to}: expected APIVERSION/KIND, e.g. kubeflow.org/v1/PyTorchJob")
    return api_version, kind
