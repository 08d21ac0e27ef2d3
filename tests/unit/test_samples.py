"""Every sample decodes, survives conversion, and renders for its framework.

A short sample (samples/v1beta1/short) names a runtime instead of a framework: it is expanded
from the runtimes kubetrain ships (config/runtimes) first, as admission expands it
(tests/unit/test_runtimes_shipped.py checks what the expansion gives each).
"""

import pathlib

import pytest
import yaml

from kubetrain.api import scheme
from kubetrain.operator import expansion, render
from kubetrain.operator.frameworks import registry

ROOT = pathlib.Path(__file__).resolve().parents[2]
# samples/legacy holds the old operators' kinds, for `kubetrain convert` (tests/unit/test_convert_seeds.py).
SAMPLES = sorted(
    p
    for p in (ROOT / "samples").rglob("*.yaml")
    if p.name != "kustomization.yaml" and p.parent.name != "legacy"
)
RUNTIMES = ROOT / "config" / "runtimes"


def shipped_runtimes() -> expansion.Resolve:
    return expansion.from_documents(
        yaml.safe_load(p.read_text()) for p in RUNTIMES.glob("*.yaml") if p.name != "kustomization.yaml"
    )


def test_there_are_samples_of_both_versions() -> None:
    assert {p.parent.name for p in SAMPLES} >= {"v1alpha1", "v1beta1"}


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_renders(path: pathlib.Path) -> None:
    doc = yaml.safe_load(path.read_text())
    if "runtimeRef" in doc["spec"]:
        doc = expansion.expand(doc, shipped_runtimes()).obj
    job = scheme.decode(doc)
    hub = scheme.to_hub(job)
    assert scheme.convert(scheme.convert(hub, doc["apiVersion"]), scheme.HUB_VERSION) == hub
    pods = [
        o for o in render.render(hub, registry.default().get(hub.spec.framework.name)) if o["kind"] == "Pod"
    ]
    assert len(pods) == sum(s.replicas for s in hub.spec.replica_specs.values())


def test_the_samples_kustomization_lists_every_sample() -> None:
    root = ROOT / "samples"
    listed = yaml.safe_load((root / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(str(p.relative_to(root)) for p in SAMPLES)


def test_the_samples_have_distinct_names() -> None:
    """`kubectl apply -k samples/` puts them all in one namespace (kustomize refuses a name twice)."""
    names = [yaml.safe_load(p.read_text())["metadata"]["name"] for p in SAMPLES]
    assert sorted(names) == sorted(set(names))
