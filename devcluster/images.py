"""Container images built on this machine, with no registry and no Docker engine.

An :class:`Image` is a recipe: Debian packages (installed into a root filesystem by
``mmdebstrap``), files copied in, Python wheels installed into a venv — kubetrain's own,
built here, and pinned requirements downloaded from PyPI as wheels — and the image's
command. Its :func:`digest` — a hash of the recipe and of the bytes of every file it
copies — names the cached archive, so an image is built once per content and reused until
something that goes into it changes.

The archive is an OCI image layout (``oci-layout``, ``index.json``, ``blobs/sha256``) with
one uncompressed layer, written by :func:`build` and loaded into a node's containerd by
:func:`load` (``ctr images import``). Pods then start it with ``imagePullPolicy:
IfNotPresent`` — a tag other than ``latest`` makes that the default.

The recipes kubetrain's local cluster uses: :func:`pause` (the pod sandbox, a static
program from ``hack/pause.go``), :func:`examples` (Python, PyTorch, Open MPI and sshd, with
the training scripts of ``samples/scripts``), :func:`operator` (kubetrain itself, as
the Dockerfile installs it) and :func:`tensorboard` (TensorBoard from PyPI, what a job's
``spec.tensorboard`` runs by default).
"""

from __future__ import annotations

import hashlib
import io
import json
import pathlib
import shutil
import subprocess
import tarfile
import tempfile
import time

import attrs

from kubetrain.devcluster import binaries
from kubetrain.operator import tensorboard as tensorboard_

__all__ = [
    "PAUSE_REF",
    "BuildError",
    "Image",
    "build",
    "digest",
    "examples",
    "for_nodes",
    "load",
    "operator",
    "pause",
    "tensorboard",
]

# Bump when the way an image is built changes, so cached archives are rebuilt.
BUILDER_VERSION = "1"
SUITE = "bookworm"
LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
VENV = "/opt/kubetrain"


class BuildError(RuntimeError):
    """An image could not be built; the message ends with the builder's output."""


@attrs.frozen(kw_only=True)
class Image:
    name: str
    tag: str
    packages: tuple[str, ...] = ()
    # (path in the image, file or directory on this machine)
    files: tuple[tuple[str, pathlib.Path], ...] = ()
    # A project whose wheel (and its dependencies') is built on this machine and installed into a
    # venv at VENV.
    wheels_from: pathlib.Path | None = None
    # Pinned requirements ("name==version") installed into that venv from PyPI's wheels for the
    # image's Python, with no dependency resolution: the list is complete, or the install fails.
    requirements: tuple[str, ...] = ()
    # shell commands run in the root filesystem (chroot) once everything else is in
    fixes: tuple[str, ...] = ()
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    user: str = ""
    workdir: str = ""

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.tag}"


PAUSE_REF = "kubetrain.local/pause:3.10"


def pause(pause_binary: pathlib.Path) -> Image:
    name, tag = PAUSE_REF.split(":")
    return Image(name=name, tag=tag, files=(("/pause", pause_binary),), entrypoint=("/pause",))


def examples(root: pathlib.Path) -> Image:
    """Python 3.11 with Debian's PyTorch, Open MPI and sshd, and kubetrain's example scripts."""
    return Image(
        name="kubetrain.local/examples",
        tag="v1",
        packages=(
            "python3-torch",
            "python3-mpi4py",
            "openmpi-bin",
            "openssh-server",
            "openssh-client",
            "procps",
        ),
        files=(("/opt/kubetrain/examples", root / "samples" / "scripts"),),
        # torchrun of Debian's torch 1.13 fails on Python 3.11 ("'NoneType' object has no attribute
        # 'get'"): its Std.from_str looks a value up by iterating an IntFlag, which no longer yields
        # 0-valued members. torch 2.0 builds the member from the value; so does this.
        fixes=(
            "sed -i 's/^            for s in Std:$/            return Std(v)\\n&/' "
            "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/api.py",
        ),
        env=("PYTHONUNBUFFERED=1", "OMP_NUM_THREADS=1"),
        workdir="/opt/kubetrain/examples",
        cmd=("python3",),
    )


def operator(root: pathlib.Path) -> Image:
    """kubetrain-operator in a venv, run as 65532 — what the Dockerfile's runtime stage holds."""
    return Image(
        name="kubetrain.local/operator",
        tag="dev",
        packages=("python3", "python3-venv", "ca-certificates"),
        files=tuple(
            (f"/src/{p}", root / p)
            for p in (
                "pyproject.toml",
                "README.md",
                "api",
                "operator",
                "devcluster",
                "client",
                "cli",
                "convert",
            )
        ),
        wheels_from=root,
        entrypoint=(f"{VENV}/bin/kubetrain-operator",),
        env=(f"PATH={VENV}/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONSAFEPATH=1", "PYTHONUNBUFFERED=1"),
        user="65532:65532",
    )


# TensorBoard and everything it imports, pinned: the recipe (and so the digest) names every wheel.
TENSORBOARD_REQUIREMENTS = (
    "tensorboard==2.21.0",
    "absl-py==2.5.1",
    "grpcio==1.85.1",
    "markdown==3.11.3",
    "markupsafe==3.0.4",
    "numpy==2.4.6",
    "packaging==26.3",
    "pillow==13.0.0",
    "protobuf==7.36.2",
    "setuptools==84.2.1",
    "tensorboard-data-server==0.7.2",
    "typing-extensions==4.16.0",
    "werkzeug==3.1.9",
)


def tensorboard() -> Image:
    """TensorBoard in a venv on Debian's Python, run as 65532: the default of ``spec.tensorboard.image``."""
    name, tag = tensorboard_.DEFAULT_IMAGE.rsplit(":", 1)
    return Image(
        name=name,
        tag=tag,
        packages=("python3", "python3-venv"),
        requirements=TENSORBOARD_REQUIREMENTS,
        entrypoint=(f"{VENV}/bin/tensorboard",),
        env=(f"PATH={VENV}/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONUNBUFFERED=1"),
        user="65532:65532",
    )


def for_nodes(root: pathlib.Path, pause_binary: pathlib.Path) -> list[Image]:
    """What every real node holds: the sandbox, the examples, the operator and TensorBoard."""
    return [pause(pause_binary), examples(root), operator(root), tensorboard()]


def digest(image: Image) -> str:
    """The hash of everything that goes into ``image``: its recipe and its files' bytes."""
    h = hashlib.sha256()
    recipe = attrs.asdict(
        image, value_serializer=lambda _i, _a, v: str(v) if isinstance(v, pathlib.Path) else v
    )
    recipe["files"] = [dest for dest, _ in image.files]
    recipe["wheels_from"] = image.wheels_from is not None
    h.update(json.dumps({"builder": BUILDER_VERSION, "suite": SUITE, **recipe}, sort_keys=True).encode())
    for dest, source in image.files:
        for path in _walk(source):
            h.update(f"\0{dest}/{path.relative_to(source)}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _walk(source: pathlib.Path) -> list[pathlib.Path]:
    if source.is_file():
        return [source]
    return sorted(
        p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


def cache_dir() -> pathlib.Path:
    return binaries.cache_dir() / "images"


def build(image: Image, *, cache: pathlib.Path | None = None) -> pathlib.Path:
    """The OCI archive of ``image``: from the cache, or built now (one builder at a time)."""
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / f"{image.name.replace('/', '_')}-{digest(image)[:16]}.tar"
    with binaries.locked(cache / ".lock"):
        if archive.exists():
            return archive
        with tempfile.TemporaryDirectory(prefix="kubetrain-image-", dir=cache) as tmp:
            work = pathlib.Path(tmp)
            rootfs = work / "rootfs"
            _rootfs(image, rootfs)
            _write_archive(image, rootfs, work, archive.with_suffix(".partial"))
            archive.with_suffix(".partial").rename(archive)
        for stale in cache.glob(f"{image.name.replace('/', '_')}-*.tar"):
            if stale != archive:
                stale.unlink()
    return archive


def _run(argv: list[str], what: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise BuildError(f"{what} failed (exit {result.returncode}): {' '.join(argv[:6])} ...\n{tail}")


def _rootfs(image: Image, rootfs: pathlib.Path) -> None:
    if image.packages:
        _run(
            [
                "mmdebstrap",
                "--variant=apt",
                "--mode=root",
                "--quiet",
                f"--include={','.join(image.packages)}",
                # No device nodes: the runtime mounts /dev in every container.
                "--skip=output/dev",
                SUITE,
                str(rootfs),
            ],
            f"mmdebstrap of {image.ref}",
        )
    else:
        rootfs.mkdir(parents=True)
    for dest, source in image.files:
        target = rootfs / dest.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target)
    if image.wheels_from is not None or image.requirements:
        _install_venv(image, rootfs)
    for command in image.fixes:
        _run(["chroot", str(rootfs), "sh", "-c", command], f"{command!r} in {image.ref}")
    shutil.rmtree(rootfs / "src", ignore_errors=True)


# The wheels of pinned requirements are those of the image's Python (Debian bookworm's 3.11).
_WHEEL_TARGET = (
    "--only-binary=:all:",
    "--python-version=3.11",
    "--implementation=cp",
    "--abi=cp311",
    "--abi=abi3",
    "--abi=none",
    "--platform=manylinux2014_x86_64",
    "--platform=manylinux_2_17_x86_64",
    "--platform=manylinux_2_28_x86_64",
)


def _install_venv(image: Image, rootfs: pathlib.Path) -> None:
    """Gather the wheels here (built or downloaded); install them offline into the image's venv."""
    wheels = rootfs / "wheels"
    wanted = list(image.requirements)
    if image.wheels_from is not None:
        _run(
            ["python3", "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(wheels), str(image.wheels_from)],
            "pip wheel kubetrain",
        )
        wanted.append("kubetrain")
    if image.requirements:
        _run(
            [
                "python3",
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                *_WHEEL_TARGET,
                "--dest",
                str(wheels),
                *image.requirements,
            ],
            f"pip download for {image.ref}",
        )
    _run(["chroot", str(rootfs), "python3", "-m", "venv", VENV], "python3 -m venv in the image")
    _run(
        [
            "chroot",
            str(rootfs),
            f"{VENV}/bin/pip",
            "install",
            "--quiet",
            "--no-index",
            "--find-links=/wheels",
            *wanted,
        ],
        f"pip install in {image.ref}",
    )
    shutil.rmtree(wheels)


def _write_archive(image: Image, rootfs: pathlib.Path, work: pathlib.Path, out: pathlib.Path) -> None:
    layer = work / "layer.tar"
    _run(
        ["tar", "--numeric-owner", "--xattrs", "--sort=name", "-C", str(rootfs), "-cf", str(layer), "."],
        f"tar of {image.ref}",
    )
    shutil.rmtree(rootfs)
    layer_digest, layer_size = _sha256_file(layer), layer.stat().st_size
    config: dict[str, object] = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            k: v
            for k, v in {
                "Entrypoint": list(image.entrypoint),
                "Cmd": list(image.cmd),
                "Env": list(image.env)
                or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                "User": image.user,
                "WorkingDir": image.workdir,
            }.items()
            if v
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]},
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": f"sha256:{hashlib.sha256(config_bytes).hexdigest()}",
            "size": len(config_bytes),
        },
        "layers": [{"mediaType": LAYER_MEDIA_TYPE, "digest": f"sha256:{layer_digest}", "size": layer_size}],
    }
    manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": f"sha256:{hashlib.sha256(manifest_bytes).hexdigest()}",
                "size": len(manifest_bytes),
                "annotations": {
                    "io.containerd.image.name": image.ref,
                    "org.opencontainers.image.ref.name": image.tag,
                },
            }
        ],
    }
    with tarfile.open(out, "w") as tar:
        _add_bytes(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        _add_bytes(tar, "index.json", json.dumps(index, sort_keys=True).encode())
        for blob in (config_bytes, manifest_bytes):
            _add_bytes(tar, f"blobs/sha256/{hashlib.sha256(blob).hexdigest()}", blob)
        tar.add(layer, arcname=f"blobs/sha256/{layer_digest}")
    layer.unlink()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    tar.addfile(info, io.BytesIO(data))


def _sha256_file(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def load(ctr: str, address: str, archive: pathlib.Path) -> None:
    """Import ``archive`` into the containerd at ``address`` (the namespace the CRI uses)."""
    _run(
        [ctr, f"--address={address}", "--namespace=k8s.io", "images", "import", str(archive)],
        f"ctr images import {archive.name}",
    )
