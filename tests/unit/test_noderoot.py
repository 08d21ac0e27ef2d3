"""The seed root real nodes start from: made once per set of images, cloned by hard links except
for what containerd writes in place."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable

import pytest

from kubetrain.devcluster import noderoot


def _containerd(tmp_path: pathlib.Path) -> pathlib.Path:
    binary = tmp_path / "bin" / "containerd"
    if not binary.exists():
        binary.parent.mkdir()
        binary.write_text("#!/bin/sh\n")
    return binary


def _archives(tmp_path: pathlib.Path, *names: str) -> list[pathlib.Path]:
    out = []
    for name in names:
        archive = tmp_path / "images" / name
        archive.parent.mkdir(exist_ok=True)
        archive.write_bytes(name.encode())
        out.append(archive)
    return out


def _fill(loads: list[pathlib.Path]) -> Callable[[pathlib.Path], None]:
    def load(d: pathlib.Path) -> None:
        loads.append(d)
        root = d / noderoot.ROOT
        layer = root / "io.containerd.snapshotter.v1.overlayfs" / "snapshots" / "1" / "fs"
        layer.mkdir(parents=True)
        (layer / "torch.py").write_text("import everything\n")
        (root / "io.containerd.snapshotter.v1.overlayfs" / "metadata.db").write_bytes(b"snapshots")
        (root / "io.containerd.metadata.v1.bolt").mkdir()
        (root / "io.containerd.metadata.v1.bolt" / "meta.db").write_bytes(b"images")
        (root / "io.containerd.grpc.v1.introspection").mkdir()
        (root / "io.containerd.grpc.v1.introspection" / "uuid").write_text("seed")

    return load


def test_a_seed_is_made_once_and_each_clone_links_layers_but_copies_databases(tmp_path: pathlib.Path) -> None:
    cache, loads = tmp_path / "cache", list[pathlib.Path]()
    archives = _archives(tmp_path, "examples-aaaa.tar", "pause-bbbb.tar")
    seed = noderoot.seeded(_containerd(tmp_path), archives, _fill(loads), cache=cache)
    again = noderoot.seeded(_containerd(tmp_path), archives, _fill(loads), cache=cache)
    assert again == seed
    assert len(loads) == 1, "the second cluster reuses the seed"

    a, b = tmp_path / "node-0" / "root", tmp_path / "node-1" / "root"
    noderoot.clone(seed, a)
    noderoot.clone(seed, b)
    layer = pathlib.Path("io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs/torch.py")
    assert (a / layer).samefile(seed / layer)
    assert (b / layer).samefile(seed / layer)
    for db in (
        "io.containerd.snapshotter.v1.overlayfs/metadata.db",
        "io.containerd.metadata.v1.bolt/meta.db",
    ):
        assert not (a / db).samefile(seed / db)
        assert not (a / db).samefile(b / db)
        assert (a / db).read_bytes() == (seed / db).read_bytes()
    (a / "io.containerd.metadata.v1.bolt/meta.db").write_bytes(b"node 0 wrote this")
    assert (b / "io.containerd.metadata.v1.bolt/meta.db").read_bytes() == b"images"
    assert not (a / "io.containerd.grpc.v1.introspection/uuid").exists(), "each containerd names itself"


def test_new_images_make_a_new_seed_and_all_but_the_last_used_other_one_go(tmp_path: pathlib.Path) -> None:
    cache, loads = tmp_path / "cache", list[pathlib.Path]()

    def seed(name: str) -> pathlib.Path:
        return noderoot.seeded(_containerd(tmp_path), _archives(tmp_path, name), _fill(loads), cache=cache)

    first = seed("examples-aaaa.tar")
    second = seed("examples-bbbb.tar")  # another image set: the first one stays
    assert first.exists()
    assert second.exists()
    os.utime(first.parents[1], (1, 1))  # used long ago, though the second was made after it
    assert seed("examples-bbbb.tar") == second
    assert len(loads) == 2, "a seed is made once"
    (cache / "dead.partial").mkdir()  # a load that was killed: never kept
    third = seed("examples-cccc.tar")
    assert len(loads) == 3
    assert third.exists()
    assert second.exists(), "the last one used before stays"
    assert not first.exists()
    names = sorted(p.name for p in cache.iterdir() if not p.name.startswith("."))
    assert names == sorted([second.parents[1].name, third.parents[1].name])


def test_a_load_that_fails_leaves_no_seed(tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "cache"
    archives = _archives(tmp_path, "examples-aaaa.tar")

    def broken(d: pathlib.Path) -> None:
        (d / "half").write_text("written before the import failed")
        raise RuntimeError("ctr images import failed")

    with pytest.raises(RuntimeError):
        noderoot.seeded(_containerd(tmp_path), archives, broken, cache=cache)
    loads: list[pathlib.Path] = []
    seed = noderoot.seeded(_containerd(tmp_path), archives, _fill(loads), cache=cache)
    assert len(loads) == 1
    assert not (seed.parents[1] / "half").exists()
    assert (seed / "io.containerd.metadata.v1.bolt/meta.db").exists()
