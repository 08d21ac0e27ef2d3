"""A CRD that would break a rolling upgrade is caught: the generated CRDs against the released ones.

Each rule of docs/deploy.md ("Upgrading") is broken once on the real TrainingJob CRD and found,
at its path; what the rule allows (additions, looser validation) is not. ``kubetrain manifests
--check`` prints one ``error:`` line per finding, and ``--release`` makes HEAD's CRDs the baseline.
"""

from __future__ import annotations

import copy
import pathlib
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import hypothesis
import pytest
import yaml
from hypothesis import strategies as st

from kubetrain.api import compatibility, crd
from kubetrain.api.compatibility import Finding
from kubetrain.cli import main as cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAME = crd.NAME
V1 = f"{NAME} v1beta1"


@pytest.fixture(scope="module")
def released() -> dict[str, Any]:
    return crd.custom_resource_definition()


def changed(released: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    """A copy of ``released`` with ``change`` made to its v1beta1 schema."""
    generated = copy.deepcopy(released)
    change(schema(generated))
    return generated


def schema(definition: dict[str, Any], version: str = "v1beta1") -> dict[str, Any]:
    (v,) = (v for v in definition["spec"]["versions"] if v["name"] == version)
    tree: dict[str, Any] = v["schema"]["openAPIV3Schema"]
    return tree


def spec(s: dict[str, Any]) -> dict[str, Any]:
    node: dict[str, Any] = s["properties"]["spec"]
    return node


def run_policy(s: dict[str, Any]) -> dict[str, Any]:
    node: dict[str, Any] = spec(s)["properties"]["runPolicy"]
    return node


def test_the_generated_crds_follow_the_released_ones() -> None:
    for path in sorted((ROOT / "config/crd/released").glob("*.yaml")):
        was = yaml.safe_load(path.read_text())
        _path, text = crd.definitions()[was["metadata"]["name"]]
        assert compatibility.changes(was, yaml.safe_load(text)) == ()


def test_the_released_commit_holds_the_released_crds() -> None:
    commit = (ROOT / "config/crd/released/commit").read_text().strip()
    assert len(commit) == 40
    for path in sorted((ROOT / "config/crd/released").glob("*.yaml")):
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:config/crd/bases/{path.name}"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert shown.stdout == path.read_text()


def test_a_crd_follows_itself(released: dict[str, Any]) -> None:
    assert compatibility.changes(released, copy.deepcopy(released)) == ()


def test_a_removed_field(released: dict[str, Any]) -> None:
    generated = changed(released, lambda s: run_policy(s)["properties"].pop("backoffLimit"))
    assert compatibility.changes(released, generated) == (
        Finding(path=f"{V1} spec.runPolicy.backoffLimit", change="removed"),
    )


def test_a_renamed_field_is_a_removed_one(released: dict[str, Any]) -> None:
    def rename(s: dict[str, Any]) -> None:
        props = run_policy(s)["properties"]
        props["backoffLimitCount"] = props.pop("backoffLimit")

    assert compatibility.changes(released, changed(released, rename)) == (
        Finding(path=f"{V1} spec.runPolicy.backoffLimit", change="removed"),
    )


def test_a_changed_type(released: dict[str, Any]) -> None:
    def retype(s: dict[str, Any]) -> None:
        run_policy(s)["properties"]["backoffLimit"] = {"type": "string"}

    assert compatibility.changes(released, changed(released, retype)) == (
        Finding(path=f"{V1} spec.runPolicy.backoffLimit", change="type changed from integer to string"),
    )


def with_default(value: object) -> Callable[[dict[str, Any]], None]:
    def give(s: dict[str, Any]) -> None:
        run_policy(s)["properties"]["backoffLimit"]["default"] = value

    return give


def test_a_changed_default(released: dict[str, Any]) -> None:
    was = changed(released, with_default(3))
    assert compatibility.changes(was, changed(released, with_default(6))) == (
        Finding(path=f"{V1} spec.runPolicy.backoffLimit", change="default changed from 3 to 6"),
    )


def test_a_default_added_or_removed(released: dict[str, Any]) -> None:
    given = changed(released, with_default(3))
    where = f"{V1} spec.runPolicy.backoffLimit"
    assert compatibility.changes(released, given) == (Finding(path=where, change="default 3 added"),)
    assert compatibility.changes(given, released) == (Finding(path=where, change="default 3 removed"),)


def test_a_new_required_field(released: dict[str, Any]) -> None:
    def require(s: dict[str, Any]) -> None:
        policy = run_policy(s)
        policy["required"] = ["backoffLimit"]
        policy["properties"]["owner"] = {"type": "string"}
        policy["required"].append("owner")

    assert compatibility.changes(released, changed(released, require)) == (
        Finding(path=f"{V1} spec.runPolicy.backoffLimit", change="became required"),
        Finding(path=f"{V1} spec.runPolicy.owner", change="became required"),
    )


def test_a_tightened_enum(released: dict[str, Any]) -> None:
    def tighten(s: dict[str, Any]) -> None:
        run_policy(s)["properties"]["cleanPodPolicy"]["enum"] = ["All", "Running"]

    assert compatibility.changes(released, changed(released, tighten)) == (
        Finding(path=f"{V1} spec.runPolicy.cleanPodPolicy", change="enum value(s) ['None'] removed"),
    )


def test_tightened_bounds_patterns_and_rules(released: dict[str, Any]) -> None:
    def tighten(s: dict[str, Any]) -> None:
        props = run_policy(s)["properties"]
        props["backoffLimit"]["minimum"] = 1
        props["backoffLimit"]["maximum"] = 100
        props["managedBy"]["maxLength"] = 32
        props["managedBy"]["pattern"] = "^[a-z]+/[a-z]+$"
        props["suspend"]["x-kubernetes-validations"] = [{"rule": "self == false"}]

    kept = {"x-kubernetes-preserve-unknown-fields": True}
    was = changed(released, lambda s: run_policy(s)["properties"]["schedulingPolicy"].update(kept))
    now = changed(released, tighten)
    where = f"{V1} spec.runPolicy"
    assert compatibility.changes(was, now) == (
        Finding(path=f"{where}.backoffLimit", change="minimum raised from 0 to 1"),
        Finding(path=f"{where}.backoffLimit", change="maximum lowered from none to 100"),
        Finding(path=f"{where}.suspend", change="new CEL rule on an existing field: self == false"),
        Finding(path=f"{where}.managedBy", change="maxLength lowered from 63 to 32"),
        Finding(path=f"{where}.managedBy", change="pattern changed: ^[a-z]+/[a-z]+$"),
        Finding(path=f"{where}.schedulingPolicy", change="x-kubernetes-preserve-unknown-fields unset"),
    )


def test_looser_validation_passes(released: dict[str, Any]) -> None:
    def loosen(s: dict[str, Any]) -> None:
        props = run_policy(s)["properties"]
        props["cleanPodPolicy"]["enum"].append("Succeeded")
        props["ttlSecondsAfterFinished"].pop("minimum")
        props["managedBy"]["maxLength"] = 253
        props["managedBy"].pop("pattern")
        spec(s).pop("x-kubernetes-validations")
        spec(s)["required"].remove("replicaSpecs")

    assert compatibility.changes(released, changed(released, loosen)) == ()


def test_a_removed_version(released: dict[str, Any]) -> None:
    undeprecated = copy.deepcopy(released)
    alpha = undeprecated["spec"]["versions"][1]
    alpha.pop("deprecated")
    removed = copy.deepcopy(undeprecated)
    removed["spec"]["versions"].pop()
    unserved = copy.deepcopy(undeprecated)
    unserved["spec"]["versions"][1]["served"] = False
    assert compatibility.changes(undeprecated, removed) == (
        Finding(path=f"{NAME} v1alpha1", change="served version removed without a deprecation release"),
    )
    assert compatibility.changes(undeprecated, unserved) == (
        Finding(path=f"{NAME} v1alpha1", change="version no longer served without a deprecation release"),
    )
    # The released CRD marks v1alpha1 deprecated: the next release may remove it.
    after_deprecation = copy.deepcopy(released)
    after_deprecation["spec"]["versions"].pop()
    assert compatibility.changes(released, after_deprecation) == ()


def with_v1(definition: dict[str, Any], *, storage: bool) -> dict[str, Any]:
    out = copy.deepcopy(definition)
    v1 = copy.deepcopy(out["spec"]["versions"][0])
    v1["name"] = "v1"
    v1["storage"] = storage
    if storage:
        for v in out["spec"]["versions"]:
            v["storage"] = False
    out["spec"]["versions"].insert(0, v1)
    return out


def test_a_storage_change_in_one_step(released: dict[str, Any]) -> None:
    assert compatibility.changes(released, with_v1(released, storage=True)) == (
        Finding(
            path=NAME,
            change="storage version changed from v1beta1 to v1 in one step: serve v1 in a release first",
        ),
    )


def test_a_storage_change_after_a_release_that_served_it(released: dict[str, Any]) -> None:
    served = with_v1(released, storage=False)
    assert compatibility.changes(released, served) == ()
    assert compatibility.changes(served, with_v1(released, storage=True)) == ()


def test_a_changed_scope_or_kind(released: dict[str, Any]) -> None:
    generated = copy.deepcopy(released)
    generated["spec"]["scope"] = "Cluster"
    generated["spec"]["names"]["plural"] = "trainjobs"
    assert compatibility.changes(released, generated) == (
        Finding(path=NAME, change="scope changed from Namespaced to Cluster"),
        Finding(path=NAME, change="names.plural changed from trainingjobs to trainjobs"),
    )


def test_a_removed_or_changed_subresource(released: dict[str, Any]) -> None:
    generated = copy.deepcopy(released)
    beta, alpha = generated["spec"]["versions"]
    beta["subresources"]["scale"]["specReplicasPath"] = ".spec.replicaSpecs.Master.replicas"
    del alpha["subresources"]["status"]
    assert compatibility.changes(released, generated) == (
        Finding(path=f"{NAME} v1beta1", change="subresource scale changed"),
        Finding(path=f"{NAME} v1alpha1", change="subresource status removed"),
    )


def object_paths(node: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every object of a schema tree that lists its properties."""
    if "properties" in node:
        yield path
        for name, child in node["properties"].items():
            yield from object_paths(child, (*path, name))


LEAVES = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "enum": st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=3),
            "maxLength": st.integers(0, 64),
            "pattern": st.just("^[a-z]+$"),
            "default": st.text(max_size=3),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("integer")},
        optional={"minimum": st.integers(-5, 5), "maximum": st.integers(6, 99), "default": st.integers(0, 5)},
    ),
)
SCHEMAS = st.recursive(
    LEAVES,
    lambda children: st.dictionaries(
        st.from_regex(r"[a-z][a-zA-Z]{0,8}", fullmatch=True), children, max_size=3
    ).flatmap(
        lambda props: st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.just(props)},
            optional={
                "required": st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([]),
                "x-kubernetes-validations": st.just([{"rule": "size(self) > 0"}]),
            },
        )
    ),
    max_leaves=6,
)


@hypothesis.given(data=st.data(), added=SCHEMAS)
@hypothesis.settings(max_examples=60, deadline=None)
def test_adding_an_optional_field_anywhere_never_breaks_the_rule(
    released: dict[str, Any], data: st.DataObject, added: dict[str, Any]
) -> None:
    tree = schema(released)
    where = data.draw(st.sampled_from(list(object_paths(tree))))
    generated = copy.deepcopy(released)
    node = schema(generated)
    for name in where:
        node = node["properties"][name]
    name = data.draw(
        st.from_regex(r"x[a-zA-Z]{0,10}", fullmatch=True).filter(lambda n: n not in node["properties"])
    )
    node["properties"][name] = added
    assert compatibility.changes(released, generated) == ()


def manifests(*argv: str) -> int:
    return int(cli.main(["manifests", *argv]))


def test_check_prints_an_error_line_per_finding(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert manifests("--root", str(tmp_path)) == 0
    released = tmp_path / "config/crd/released"
    released.mkdir()
    for base, text in crd.definitions().values():
        (released / pathlib.PurePath(base).name).write_text(text)
    assert manifests("--check", "--root", str(tmp_path)) == 0
    path = released / pathlib.PurePath(crd.CRD_PATH).name
    was = yaml.safe_load(path.read_text())
    policy = was["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "runPolicy"
    ]
    policy["properties"]["retired"] = {"type": "string"}
    policy["properties"]["cleanPodPolicy"]["default"] = "Running"
    path.write_text(yaml.safe_dump(was))
    capsys.readouterr()
    assert manifests("--check", "--root", str(tmp_path)) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"error: {V1} spec.runPolicy.cleanPodPolicy: default Running removed",
        f"error: {V1} spec.runPolicy.retired: removed",
    ]


def test_check_without_released_crds_fails(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert manifests("--root", str(tmp_path)) == 0
    capsys.readouterr()
    assert manifests("--check", "--root", str(tmp_path)) == 1
    assert capsys.readouterr().err == (
        f"error: {tmp_path}/config/crd/released: no released CRDs: run `kubetrain manifests --release`\n"
    )


def git(root: pathlib.Path, *argv: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *argv],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_release_names_the_commit_that_holds_the_crds(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(tmp_path, "init", "-q")
    assert manifests("--root", str(tmp_path)) == 0
    base = tmp_path / crd.CRD_PATH
    base.write_text(base.read_text() + "# not yet\n")
    git(tmp_path, "add", "config")
    git(tmp_path, "commit", "-q", "-m", "a release")
    capsys.readouterr()
    assert manifests("--release", "--root", str(tmp_path)) == 1
    assert (
        capsys.readouterr().err
        == f"error: {crd.CRD_PATH}: HEAD's differs from the generated one: commit it first\n"
    )
    assert manifests("--root", str(tmp_path)) == 0
    git(tmp_path, "commit", "-q", "-am", "current")
    assert manifests("--release", "--root", str(tmp_path)) == 0
    released = tmp_path / "config/crd/released"
    assert (released / "commit").read_text() == git(tmp_path, "rev-parse", "HEAD")
    assert sorted(p.name for p in released.glob("*.yaml")) == sorted(
        pathlib.PurePath(p).name for p, _ in crd.definitions().values()
    )
    assert manifests("--check", "--root", str(tmp_path)) == 0
