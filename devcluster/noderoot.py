"""The node images unpacked once: a containerd root that every real node starts from.

A real node holds the sandbox, examples, operator and TensorBoard images, about 2 GB. Importing
them (``ctr images import``: every blob written to the content store, then unpacked again into
overlay snapshots) took about 70 s per node, most of a real-node cluster's start, and wrote
4 GB to disk each time. So they are imported once, into a root of their own kept in the cache
under the name of what went into it (the archives, whose names carry their content hashes, and
containerd's binary), and each node's root is made from that *seed* by hard links.

Sharing is safe because containerd writes none of those files in place: blobs are immutable,
an unpacked layer is an overlay lower directory (a container's changes go to an upper
directory of its own, files copied up first), and new snapshots get new directories. What it
does write in place, its bbolt databases, each node gets a copy of; the introspection UUID,
which names one containerd, is left out so that each node makes its own. Seeds that no longer
match are removed when a new one is made, under the same lock as cloning, but for the last one
used before it: the node tier's image set and the dev cluster's smaller one each keep theirs.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
from collections.abc import Callable, Sequence

from kubetrain.devcluster import binaries

__all__ = ["clone", "seeded"]

# The seed's root inside the directory ``load`` fills (as realnode lays a node's out).
ROOT = pathlib.Path("containerd") / "root"
# Files a node's containerd writes in place: copied, not linked.
_WRITTEN_IN_PLACE = ".db"
_OWN = pathlib.Path("io.containerd.grpc.v1.introspection") / "uuid"


def cache_dir() -> pathlib.Path:
    return binaries.cache_dir() / "node-roots"


def seeded(
    containerd: pathlib.Path,
    archives: Sequence[pathlib.Path],
    load: Callable[[pathlib.Path], None],
    *,
    cache: pathlib.Path | None = None,
) -> pathlib.Path:
    """The seed root for ``archives``: from the cache, or made now by ``load``, which starts a
    containerd whose directory is the path it is given, imports the archives and stops it."""
    cache = cache or cache_dir()
    seed = cache / _key(containerd, archives)
    with binaries.locked(cache / ".lock"):
        if not seed.is_dir():
            work = seed.with_suffix(".partial")
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            load(work)
            work.rename(seed)
            others = sorted(
                (p for p in cache.iterdir() if p != seed and not p.name.startswith(".") and p.is_dir()),
                key=lambda p: (p.suffix != ".partial", p.stat().st_mtime),
            )
            for stale in others[:-1] if others and others[-1].suffix != ".partial" else others:
                shutil.rmtree(stale, ignore_errors=True)  # all but the whole seed used last
        os.utime(seed)  # used now
    return seed / ROOT


def clone(seed: pathlib.Path, dest: pathlib.Path) -> None:
    """Make the containerd root ``dest`` (which must not exist) from ``seed`` by hard links."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with binaries.locked(seed.parents[len(ROOT.parts)] / ".lock"):
        subprocess.run(["cp", "-a", "--link", str(seed), str(dest)], check=True, capture_output=True)
    (dest / _OWN).unlink(missing_ok=True)
    for db in dest.rglob(f"*{_WRITTEN_IN_PLACE}"):
        if db.is_file():
            copy = db.with_name(db.name + ".copy")
            shutil.copy2(db, copy)
            os.replace(copy, db)


def _key(containerd: pathlib.Path, archives: Sequence[pathlib.Path]) -> str:
    h = hashlib.sha256()
    st = containerd.stat()
    h.update(f"{containerd.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    for archive in archives:
        h.update(f"{archive.name}\0{archive.stat().st_size}\0".encode())
    return h.hexdigest()[:16]
