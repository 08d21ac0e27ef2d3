"""The framework registry and the conversion registry refuse what would be ambiguous."""

import re
from importlib import metadata

import attrs
import pytest
from testkit import plugin
from testkit.builders import a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import conversion, scheme, v1alpha1, v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import pytorch, registry, tensorflow


def test_a_framework_name_registers_once() -> None:
    reg = registry.Registry([tensorflow.FRAMEWORK])
    with pytest.raises(ValueError, match="framework 'tensorflow' is registered already"):
        reg.register(tensorflow.FRAMEWORK)
    with pytest.raises(ValueError, match="registered already"):
        reg.register(attrs.evolve(pytorch.FRAMEWORK, name="tensorflow"))


def test_an_unknown_framework_lists_the_known_ones() -> None:
    with pytest.raises(
        registry.UnknownFrameworkError,
        match="unknown framework 'theano'; registered: caffe2, chainer, generic, jax, mpi, mxnet, paddle, pytorch, tensorflow, xgboost",
    ):
        registry.Registry(registry.BUILTINS).get("theano")


def entry_points(*values: str) -> metadata.EntryPoints:
    return metadata.EntryPoints(
        metadata.EntryPoint(name=v.split(":")[1].lower(), value=v, group=registry.ENTRY_POINT_GROUP)
        for v in values
    )


def test_third_party_frameworks_arrive_through_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "entry_points", lambda group: entry_points("testkit.plugin:FRAMEWORK"))
    reg = registry.Registry(registry.BUILTINS)
    reg.load_entry_points()
    assert reg.names() == sorted([*(f.name for f in registry.BUILTINS), "toyframework"])
    job = a_job("toy").framework("toyframework").replicas("Node", 2, tmpl=template(container("toy"))).build()
    pods = [o for o in render.render(job, reg.get("toyframework")) if o["kind"] == "Pod"]
    assert [framework_env(p["spec"]["containers"][0]) for p in pods] == [
        {"TOY_INDEX": "0", "TOY_SIZE": "2"},
        {"TOY_INDEX": "1", "TOY_SIZE": "2"},
    ]
    assert plugin.FRAMEWORK is reg.get("toyframework")


def test_a_plugin_cannot_replace_a_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugin, "FRAMEWORK", attrs.evolve(plugin.FRAMEWORK, name="pytorch"))
    monkeypatch.setattr(metadata, "entry_points", lambda group: entry_points("testkit.plugin:FRAMEWORK"))
    with pytest.raises(ValueError, match="framework 'pytorch' is registered already"):
        registry.Registry(registry.BUILTINS).load_entry_points()


def test_an_entry_point_must_name_a_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        metadata, "entry_points", lambda group: entry_points("testkit.plugin:NOT_A_FRAMEWORK")
    )
    with pytest.raises(TypeError, match="is not a kubetrain Framework"):
        registry.Registry().load_entry_points()


def test_the_default_registry_has_the_builtins() -> None:
    assert {"pytorch", "tensorflow"} <= set(registry.default().names())


# --- conversion registry ------------------------------------------------------------------


def test_a_version_registers_once() -> None:
    reg = conversion.Registry(conversion.Hub(v1beta1.TrainingJob))
    spoke = conversion.Spoke(type=v1alpha1.TrainingJob, to_hub=lambda s: s, from_hub=lambda h: h)
    reg.register(spoke)
    with pytest.raises(
        ValueError, match=re.escape("a conversion for training.kubetrain.dev/v1alpha1 is registered already")
    ):
        reg.register(spoke)
    with pytest.raises(ValueError, match="v1beta1 is registered already"):
        reg.register(conversion.Spoke(type=v1beta1.TrainingJob, to_hub=lambda s: s, from_hub=lambda h: h))


def test_check_finds_served_versions_without_a_converter() -> None:
    reg = conversion.Registry(conversion.Hub(v1beta1.TrainingJob))
    with pytest.raises(
        ValueError, match=re.escape("no conversion registered for training.kubetrain.dev/v1alpha1")
    ):
        reg.check([v1beta1.API_VERSION, v1alpha1.API_VERSION])
    reg.check([v1beta1.API_VERSION])


def test_unknown_versions_are_a_conversion_error() -> None:
    with pytest.raises(
        conversion.ConversionError, match=re.escape("unknown apiVersion 'training.kubetrain.dev/v2'")
    ):
        scheme.registry.type_for("training.kubetrain.dev/v2")


@attrs.frozen(kw_only=True)
class _V0:
    """A made-up second spoke, to show spoke-to-spoke conversion goes through the hub."""

    api_version: str = "training.kubetrain.dev/v0"
    hub: v1beta1.TrainingJob


def test_spoke_to_spoke_goes_through_the_hub() -> None:
    reg = conversion.Registry(conversion.Hub(v1beta1.TrainingJob))
    reg.register(v1alpha1.trainingjob_conversion.SPOKE)
    calls: list[str] = []

    def to_hub(v0: _V0) -> v1beta1.TrainingJob:
        calls.append("to_hub")
        return v0.hub

    reg.register(conversion.Spoke(type=_V0, to_hub=to_hub, from_hub=lambda h: _V0(hub=h)))
    job = a_job("j").replicas("Worker", 1).build()
    legacy = reg.convert(_V0(hub=job), v1alpha1.API_VERSION)
    assert isinstance(legacy, v1alpha1.TrainingJob)
    assert calls == ["to_hub"]
    back = reg.convert(legacy, "training.kubetrain.dev/v0")
    assert back == _V0(hub=job)
