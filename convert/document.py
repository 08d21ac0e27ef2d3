"""One document of any old kind in, one v1beta1 TrainingJob (and its notes) out.

:func:`convert` picks the :class:`~kubetrain.convert.kinds.Kind` by apiVersion and kind —
a TrainingJob of either version passes through, as v1beta1 (one made from a runtime as it is,
its own parts checked) — reads the document, and then
checks the result exactly as admission would (:func:`kubetrain.operator.intake.decode`), so
what ``kubetrain convert`` prints is a job the cluster accepts. Kubeflow Trainer v2's kinds
give what is not a whole job: a runtime, or a job made from one (``spec.runtimeRef``), whole
only once expanded; their converters check them themselves, and :attr:`Converted.document`
holds them. :func:`back` writes a TrainingJob as an old kind, where that kind can express it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kubetrain.api import scheme, v1beta1, validation
from kubetrain.convert import kinds, notes, reader, trainer
from kubetrain.operator import intake

__all__ = ["KINDS", "Converted", "back", "convert", "kind_of"]


def _all_kinds() -> tuple[kinds.Kind, ...]:
    from kubetrain.convert import (
        caffe2job,
        chainerjob,
        kubeflow,
        mpijob,
        mxjob,
        tfjob,
        trainingruntime,
        trainjob,
    )

    found: list[kinds.Kind] = []
    for module in (tfjob, mxjob, caffe2job, chainerjob, kubeflow, mpijob, trainjob, trainingruntime):
        for kind in module.KINDS:
            for other in found:
                clash = {(v, k) for v in kind.api_versions for k in (kind.kind, *kind.spellings)} & {
                    (v, k) for v in other.api_versions for k in (other.kind, *other.spellings)
                }
                if clash:
                    raise ValueError(f"{sorted(clash)} registered twice ({other.kind}, {kind.kind})")
            found.append(kind)
    return tuple(found)


KINDS = _all_kinds()


@attrs.frozen(kw_only=True)
class Converted:
    job: v1beta1.TrainingJob | None = None  # a whole TrainingJob, as admission decodes it
    document: dict[str, Any] | None = None  # else the converted document: a runtime, or a short job
    notes: tuple[notes.Note, ...] = ()

    def encoded(self) -> dict[str, Any]:
        """What ``kubetrain convert`` prints: plain wire data."""
        return scheme.encode(self.job) if self.job is not None else dict(self.document or {})


def kind_of(data: Mapping[str, Any]) -> kinds.Kind | None:
    api_version, kind = data.get("apiVersion"), data.get("kind")
    return next((k for k in KINDS if k.reads(str(api_version), str(kind))), None)


def convert(data: Any) -> Converted:
    """``data`` as a v1beta1 TrainingJob; bad input raises ValidationError with input paths."""
    if not isinstance(data, Mapping):
        raise validation.ValidationError.at((), f"expected an object, got {type(data).__name__}")
    spec = data.get("spec")
    if data.get("apiVersion") == v1beta1.API_VERSION and isinstance(spec, Mapping) and "runtimeRef" in spec:
        return _made_from_runtime(data)
    if data.get("apiVersion") in scheme.SERVED_VERSIONS:
        return Converted(job=_admitted(scheme.convert_unstructured(data, v1beta1.API_VERSION)))
    kind = kind_of(data)
    if kind is None:
        raise validation.ValidationError.at(("apiVersion",), _unknown(data))
    findings = reader.Findings()
    doc = reader.Reader(data, (), findings)
    doc.take("apiVersion")
    doc.take("kind")
    out = kind.to_job(doc)
    doc.finish()
    findings.check()
    if out.get("kind") != v1beta1.KIND or "runtimeRef" in out.get("spec", {}):
        return Converted(document=out, notes=tuple(findings.notes))
    return Converted(job=_kept_host_names(_admitted(out)), notes=tuple(findings.notes))


def back(job: v1beta1.TrainingJob, api_version: str, kind: str) -> dict[str, Any]:
    """``job`` written as the old ``kind``; raises Inexpressible where that kind cannot hold it."""
    found = next((k for k in KINDS if k.reads(api_version, kind)), None)
    if found is None or found.from_job is None:
        raise validation.ValidationError.at((), f"cannot write {api_version} {kind}")
    out = found.from_job(job)
    out["apiVersion"] = api_version
    return out


def _made_from_runtime(data: Mapping[str, Any]) -> Converted:
    """A v1beta1 TrainingJob made from a runtime, as it is: whole only once the runtime it names
    expands it (at admission, or ``kubetrain render --runtimes``); its own parts checked here."""
    findings = reader.Findings()
    trainer.check_short_job(reader.Reader(data, (), findings), data["spec"])
    findings.check()
    return Converted(document=dict(data))


def _admitted(doc: dict[str, Any]) -> v1beta1.TrainingJob:
    try:
        return intake.decode(doc).job
    except validation.ValidationError as e:
        # The input converted, but the job would be refused: say so in the TrainingJob's terms.
        raise validation.ValidationError(
            attrs.evolve(f, message=f"{f.message} (in the converted TrainingJob)") for f in e.errors
        ) from None


def _kept_host_names(job: v1beta1.TrainingJob) -> v1beta1.TrainingJob:
    """``job`` with the host names its old kind gave, written out (unset, a new v1beta1 job is
    given PerJob: :mod:`kubetrain.api.v1beta1.trainingjob_defaults`)."""
    if job.spec.network.host_names is not None:
        return job
    network = v1beta1.NetworkSpec(host_names=v1beta1.HostNames.PER_REPLICA)
    return attrs.evolve(job, spec=attrs.evolve(job.spec, network=network))


def _unknown(data: Mapping[str, Any]) -> str:
    known = sorted({f"{v} {k.kind}" for k in KINDS for v in k.api_versions})
    return (
        f"{data.get('apiVersion')!r} {data.get('kind')!r} is not a kind kubetrain converts; "
        f"it reads TrainingJob and: {', '.join(known)}"
    )
