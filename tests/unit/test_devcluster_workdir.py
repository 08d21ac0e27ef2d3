"""A killed cluster's working directory is removed by the next one; nobody else's is."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

from kubetrain.devcluster import process, workdir


def owned_by(base: pathlib.Path, name: str, owner: object) -> pathlib.Path:
    wd = base / f"{workdir.PREFIX}{name}"
    (wd / "etcd").mkdir(parents=True)
    (wd / "etcd" / "db").write_bytes(b"x" * 1024)
    if owner is not None:
        (wd / workdir.OWNER).write_text(owner if isinstance(owner, str) else json.dumps(owner))
    return wd


def a_dead_process() -> dict[str, int | None]:
    child = subprocess.Popen(["sleep", "60"])
    owner = {"pid": child.pid, "started": process.started_at(child.pid)}
    child.kill()
    child.wait()
    return owner


def test_create_names_this_process_as_owner(tmp_path: pathlib.Path) -> None:
    wd = workdir.create(tmp_path)
    assert wd.parent == tmp_path
    assert wd.name.startswith(workdir.PREFIX)
    owner = json.loads((wd / workdir.OWNER).read_text())
    assert owner == {"pid": os.getpid(), "started": process.started_at(os.getpid())}
    # Its owner runs: the next cluster keeps it.
    assert workdir.sweep(tmp_path) == []
    assert wd.exists()


def test_create_removes_what_a_killed_owner_left(tmp_path: pathlib.Path) -> None:
    dead = owned_by(tmp_path, "dead", a_dead_process())
    # The pid is this very process's, but it started at another time: a reused pid.
    reused = owned_by(tmp_path, "reused", {"pid": os.getpid(), "started": 1})
    live = owned_by(tmp_path, "live", {"pid": os.getpid(), "started": process.started_at(os.getpid())})
    new = workdir.create(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, new.name])
    assert not dead.exists()
    assert not reused.exists()


def test_directories_without_a_readable_owner_are_left_alone(tmp_path: pathlib.Path) -> None:
    kept = [
        owned_by(tmp_path, "older-version", None),
        owned_by(tmp_path, "half-written", '{"pid": 12'),
        owned_by(tmp_path, "wrong-shape", {"process": 1}),
    ]
    other = tmp_path / "kubetrain-deploy-x"
    other.mkdir()
    (other / workdir.OWNER).write_text(json.dumps(a_dead_process()))
    assert workdir.sweep(tmp_path) == []
    assert all(p.exists() for p in [*kept, other])
