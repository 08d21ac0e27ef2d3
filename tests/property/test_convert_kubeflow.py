"""Generated Kubeflow v1 documents and MPIJobs, of every kind, in every spelling, convert.

For each kind, any valid document (``testkit.kubeflow_kinds.documents``: random replica
types, counts, ports, restart and run policies, templates, the kind's own fields, every key
in any of its spellings) converts to a TrainingJob that admission accepts; every Kubeflow
replica renders as a pod named as Kubeflow named it, with the old main container, the pod
restart policy Kubeflow gave it, and each variable of Kubeflow's env — the same value, or a
warning naming it; and written back, it is the document as Kubeflow's defaulting left it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import kubeflow_kinds

from kubetrain.api import validation
from kubetrain.convert import document
from kubetrain.operator import render
from kubetrain.operator.frameworks import registry


def check(doc: dict[str, Any]) -> None:
    kind = kubeflow_kinds.kind_of(doc)
    converted = document.convert(doc)
    norm = kubeflow_kinds.normalise(doc)
    ns = norm["metadata"].get("namespace", "default")
    notes = " ".join(n.message for n in converted.notes)
    fw = registry.default().get(converted.job.spec.framework.name)
    pods = {o["metadata"]["name"]: o for o in render.render(converted.job, fw) if o["kind"] == "Pod"}
    names = set()
    for replica_type, rs in norm["spec"][kind.specs_field].items():
        for i in range(rs["replicas"]):
            name = kubeflow_kinds.pod_name(norm, replica_type, i)
            names.add(name)
            pod = pods[name]
            assert pod["spec"]["restartPolicy"] == {"ExitCode": "Never"}.get(
                rs["restartPolicy"], rs["restartPolicy"]
            )
            ours = kubeflow_kinds.main_container(pod, kind.container)
            theirs = kubeflow_kinds.main_container(rs["template"], kind.container)
            for field in ("image", "command", "args"):
                assert ours.get(field) == theirs.get(field)
            env = {e["name"]: e.get("value") for e in ours.get("env", [])}
            for var, value in kubeflow_kinds.kubeflow_env(norm, replica_type, i).items():
                if var not in env or not kubeflow_kinds.equivalent(var, value, env[var], ns):
                    assert var in notes, (
                        f"{name}: {var}={value!r}, kubetrain {env.get(var)!r}, and no warning"
                    )
    assert set(pods) == names
    assert document.back(converted.job, doc["apiVersion"], doc["kind"]) == norm


@pytest.mark.parametrize("key", sorted(kubeflow_kinds.KINDS))
@given(data=st.data())
def test_a_kubeflow_document_converts_runs_as_kubeflow_ran_it_and_comes_back(
    key: str, data: st.DataObject
) -> None:
    check(data.draw(kubeflow_kinds.documents(key)))


@pytest.mark.parametrize("key", sorted(kubeflow_kinds.KINDS))
@settings(max_examples=min(200, settings.default.max_examples))
@given(data=st.data())
def test_a_field_kubeflow_never_had_is_an_error_at_its_path(key: str, data: st.DataObject) -> None:
    doc = data.draw(kubeflow_kinds.documents(key))
    spec = doc["spec"]
    specs_field = next(
        k for k in spec if k.replace("_", "").lower() == kubeflow_kinds.KINDS[key].specs_field.lower()
    )
    replica_type = data.draw(st.sampled_from(sorted(spec[specs_field])))
    where = data.draw(st.sampled_from([("spec",), ("spec", specs_field, replica_type)]))
    target: dict[str, Any] = doc
    for part in where:
        target = target[part]
    target["replicaz"] = 1
    with pytest.raises(validation.ValidationError) as e:
        document.convert(doc)
    assert validation.FieldError(path=(*where, "replicaz"), message="unknown field") in e.value.errors
