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
the Dockerfile installs it; :func:`released_operator` from another source tree) and :func:`tensorboard` (TensorBoard from PyPI, what a job's
``spec.tensorboard`` runs by default). The node tier adds :func:`tensorflow`, :func:`mxnet` and
:func:`chainer`: stand-ins for the images the first operators' READMEs name, built here and
known by those names too (``aliases``), so that their converted jobs run verbatim; the examples
image stands in for the Caffe2Job README's.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import io
import json
import pathlib
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence

import attrs

from kubetrain.devcluster import binaries
from kubetrain.operator import tensorboard as tensorboard_

__all__ = [
    "PAUSE_REF",
    "BuildError",
    "Image",
    "build",
    "build_all",
    "build_each",
    "chainer",
    "digest",
    "examples",
    "for_nodes",
    "load",
    "mxnet",
    "operator",
    "pause",
    "released_operator",
    "tensorboard",
    "tensorflow",
]

# Bump when the way an image is built changes, so cached archives are rebuilt.
BUILDER_VERSION = "1"
# Images built at once (build_each).
BUILDERS = 2
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
    # Pinned source distributions ("name==version") that PyPI has no wheel of: built into wheels
    # here (with ``build_constraints`` for their build environment) and installed like requirements.
    sdists: tuple[str, ...] = ()
    build_constraints: tuple[str, ...] = ()
    # shell commands run in the root filesystem (chroot) once everything else is in
    fixes: tuple[str, ...] = ()
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    user: str = ""
    workdir: str = ""
    # The Debian release of the root filesystem, and its Python (whose wheels are downloaded).
    suite: str = SUITE
    python: str = "3.11"
    # More names for the same image (fully qualified, as the CRI resolves them): a seed job's
    # image, made here as a stand-in for the one its README names.
    aliases: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.tag}"


PAUSE_REF = "kubetrain.local/pause:3.10"
OPERATOR = "kubetrain.local/operator"


def pause(pause_binary: pathlib.Path) -> Image:
    name, tag = PAUSE_REF.split(":")
    return Image(name=name, tag=tag, files=(("/pause", pause_binary),), entrypoint=("/pause",))


def examples(root: pathlib.Path) -> Image:
    """Python 3.11 with Debian's PyTorch, Open MPI and sshd, and kubetrain's example scripts.

    It is also the stand-in for the Caffe2Job README's image (``aliases``): Caffe2 lives on in
    PyTorch's Gloo, and ``caffe2_train.py`` is that image's ``resnet50_trainer.py``, at its path,
    run by ``python`` (Debian's ``python-is-python3``); ``redis-server`` (7 MB) is the rendezvous
    the README's job meets through, so a test runs it from this image, not from one more."""
    caffe2_examples = "/usr/local/caffe2/caffe2/python/examples"
    scripts = root / "samples" / "scripts"
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
            "python-is-python3",
            "redis-server",
        ),
        files=(
            ("/opt/kubetrain/examples", scripts),
            (f"{caffe2_examples}/resnet50_trainer.py", scripts / "caffe2_train.py"),
            (f"{caffe2_examples}/kubetrain_progress.py", scripts / "kubetrain_progress.py"),
        ),
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
        aliases=(CAFFE2,),
    )


def operator(root: pathlib.Path) -> Image:
    """kubetrain-operator in a venv, run as 65532 — what the Dockerfile's runtime stage holds."""
    return Image(
        name=OPERATOR,
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


def released_operator(root: pathlib.Path, commit: str) -> Image:
    """:func:`operator` built from another source tree: ``root``, a checkout of ``commit`` (the
    last release's, for the upgrade test). Its own name keeps its cached archive beside the working
    tree's (the cache keeps one archive per name) and its tag names the commit, so that a rollout
    between the two changes the Deployment's pods."""
    return attrs.evolve(operator(root), name="kubetrain.local/released-operator", tag=commit[:12])


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


# The first operators' READMEs name images that are not reachable from here. Their jobs run
# on stand-ins built here under the same names (``aliases``): the framework the README's image
# held, now, and a script in samples/scripts that does what its program did.
TF_SAMPLE = "gcr.io/tf-on-k8s-dogfood/tf_sample:dc944ff"  # the TfJob README's MASTER and WORKER
TF_PS = "docker.io/tensorflow/tensorflow:1.3.0"  # the PS kubetrain convert gives a template-less PS
MXNET_LINEAR_DIST = "docker.io/stefanofioravanzo/mxnet-linear-dist:cpu"  # the MXJob README's
CHAINERMN = "docker.io/everpeace/chainermn:1.3.0"  # the ChainerJob README's
CAFFE2 = "docker.io/kubeflow/caffe2:py2-cuda9.0-cudnn7-ubuntu16.04"  # the Caffe2Job README's: examples()

_EXAMPLES = "/opt/kubetrain/examples"
_VENV_ENV = (f"PATH={VENV}/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONUNBUFFERED=1", "OMP_NUM_THREADS=1")

# tensorflow-cpu and everything it imports, pinned (pip install + pip freeze, 2026-11-27).
TENSORFLOW_REQUIREMENTS = (
    "tensorflow-cpu==2.21.0",
    "absl-py==2.5.1",
    "astunparse==1.6.3",
    "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3",
    "flatbuffers==25.12.19",
    "gast==0.7.0",
    "google-pasta==0.2.0",
    "grpcio==1.85.3",
    "h5py==3.14.0",
    "idna==3.20",
    "keras==3.15.1",
    "libclang==18.1.1",
    "markdown-it-py==4.3.0",
    "mdurl==0.1.2",
    "ml-dtypes==0.6.0",
    "namex==0.1.0",
    "numpy==2.4.6",
    "opt-einsum==3.4.0",
    "optree==0.20.0",
    "packaging==26.4",
    "protobuf==7.36.2",
    "pygments==2.21.0",
    "requests==2.34.2",
    "rich==15.0.0",
    "setuptools==84.2.1",
    "six==1.17.0",
    "termcolor==3.3.0",
    "typing-extensions==4.16.0",
    "urllib3==2.8.0",
    "wheel==0.48.0",
    "wrapt==2.5.2",
)


def tensorflow(root: pathlib.Path) -> Image:
    """TensorFlow 2.21 (CPU) in a venv, ``python`` first on PATH, running ``tf_train.py``: the
    stand-in for the TfJob README's image and for the parameter server ``kubetrain convert``
    gives a PS without a template (whose command replaces the entrypoint)."""
    return Image(
        name="kubetrain.local/tensorflow",
        tag="2.21.0",
        packages=("python3", "python3-venv"),
        requirements=TENSORFLOW_REQUIREMENTS,
        files=((_EXAMPLES, root / "samples" / "scripts"),),
        entrypoint=(f"{VENV}/bin/python", f"{_EXAMPLES}/tf_train.py"),
        env=_VENV_ENV,
        workdir=_EXAMPLES,
        aliases=(TF_SAMPLE, TF_PS),
    )


# MXNet 1.9.1 runs on Python 3.11 with a numpy from before np.bool was removed (1.24).
MXNET_REQUIREMENTS = (
    "mxnet==1.9.1",
    "numpy==1.23.5",
    "graphviz==0.8.4",
    "requests==2.34.2",
    "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3",
    "idna==3.20",
    "urllib3==2.8.0",
)


def mxnet(root: pathlib.Path) -> Image:
    """MXNet 1.9.1 in a venv running ``mxnet_train.py`` (each role from ``DMLC_ROLE``): the
    stand-in for the MXJob README's image, which ran a linear regression with ``dist_sync``."""
    return Image(
        name="kubetrain.local/mxnet",
        tag="1.9.1",
        # libmxnet.so links the system's OpenMP and quadmath
        packages=("python3", "python3-venv", "libgomp1", "libquadmath0"),
        requirements=MXNET_REQUIREMENTS,
        files=((_EXAMPLES, root / "samples" / "scripts"),),
        entrypoint=(f"{VENV}/bin/python", f"{_EXAMPLES}/mxnet_train.py"),
        env=_VENV_ENV,
        workdir=_EXAMPLES,
        aliases=(MXNET_LINEAR_DIST,),
    )


# Chainer's own import checks still use numpy.distutils and pkg_resources: numpy 1.x and a
# setuptools from before 81. mpi4py's wheel carries Open MPI's binding.
CHAINER_REQUIREMENTS = (
    "mpi4py==4.1.2",
    "numpy==1.26.4",
    "protobuf==7.36.2",
    "six==1.17.0",
    "typing-extensions==4.16.0",
    "filelock==4.3.1",
    "setuptools==66.1.1",
)


def chainer(root: pathlib.Path) -> Image:
    """Chainer 7.8.1 (ChainerMN) with Open MPI and sshd: the stand-in for the ChainerJob README's
    image, whose ``/train_mnist.py`` is ``chainer_train.py``. Ranks that ``mpiexec`` starts over
    ssh get a fresh environment, so the venv's Python is ``python3`` on the default PATH."""
    return Image(
        name="kubetrain.local/chainer",
        tag="7.8.1",
        packages=("python3", "python3-venv", "openmpi-bin", "openssh-server", "openssh-client"),
        requirements=CHAINER_REQUIREMENTS,
        # PyPI has only its source; setup.py imports pkg_resources
        sdists=("chainer==7.8.1",),
        build_constraints=("setuptools<70",),
        files=(
            (_EXAMPLES, root / "samples" / "scripts"),
            ("/train_mnist.py", root / "samples" / "scripts" / "chainer_train.py"),
            ("/kubetrain_progress.py", root / "samples" / "scripts" / "kubetrain_progress.py"),
        ),
        # sshd takes the keys mounted from the job's Secret (links, not 0700 files), as the MPI
        # Operator's images do.
        fixes=(
            # A wrapper, not a link: Python finds its venv from the path it was started by.
            f"printf '#!/bin/sh\\nexec {VENV}/bin/python3 \"$@\"\\n' > /usr/local/bin/python3",
            "chmod 755 /usr/local/bin/python3",
            "echo 'StrictModes no' >> /etc/ssh/sshd_config",
        ),
        env=_VENV_ENV,
        workdir="/",
        cmd=("python3",),
        aliases=(CHAINERMN,),
    )


def for_nodes(root: pathlib.Path, pause_binary: pathlib.Path | None, *, seeds: bool = False) -> list[Image]:
    """What every real node holds: the sandbox, the examples, the operator and TensorBoard; with
    ``seeds``, the first operators' frameworks too (the node tier's, not the dev cluster's). The
    sandbox is built from the node parts' pause program: without it, the others alone."""
    frameworks = [tensorflow(root), mxnet(root), chainer(root)] if seeds else []
    sandbox = [pause(pause_binary)] if pause_binary is not None else []
    return [*sandbox, examples(root), operator(root), tensorboard(), *frameworks]


def digest(image: Image) -> str:
    """The hash of everything that goes into ``image``: its recipe and its files' bytes."""
    h = hashlib.sha256()
    recipe = attrs.asdict(
        image, value_serializer=lambda _i, _a, v: str(v) if isinstance(v, pathlib.Path) else v
    )
    recipe["files"] = [dest for dest, _ in image.files]
    recipe["wheels_from"] = image.wheels_from is not None
    h.update(json.dumps({"builder": BUILDER_VERSION, **recipe}, sort_keys=True).encode())
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


def build_each(
    wanted: Sequence[Image], *, cache: pathlib.Path | None = None
) -> Iterator[tuple[Image, pathlib.Path | BuildError | OSError]]:
    """Each of ``wanted`` with its OCI archive, or what stopped its build, as each ends: built two
    at a time. A build is mostly one core's work (mmdebstrap unpacking, pip installing) and waits
    on downloads: cold, the node tier's seven took 254 s one after another on two cores."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=BUILDERS) as pool:
        running = {pool.submit(build, i, cache=cache): i for i in wanted}
        for done in concurrent.futures.as_completed(running):
            try:
                yield running[done], done.result()
            except (BuildError, OSError) as e:
                yield running[done], e


def build_all(wanted: Sequence[Image], *, cache: pathlib.Path | None = None) -> list[pathlib.Path]:
    """The OCI archives of ``wanted``, in order (:func:`build_each`); the first failure raised."""
    built = dict(build_each(wanted, cache=cache))
    archives = []
    for image in wanted:
        if not isinstance(archive := built[image], pathlib.Path):
            raise archive
        archives.append(archive)
    return archives


def cached(image: Image, *, cache: pathlib.Path | None = None) -> bool:
    """Whether ``image``'s archive is in the cache already."""
    return _archive(image, cache or cache_dir()).exists()


def _archive(image: Image, cache: pathlib.Path) -> pathlib.Path:
    return cache / f"{_stem(image)}-{digest(image)[:16]}.tar"


def _stem(image: Image) -> str:
    """The name its cached archive and lock file begin with."""
    return image.name.replace("/", "_")


def build(image: Image, *, cache: pathlib.Path | None = None) -> pathlib.Path:
    """The OCI archive of ``image``: from the cache, or built now (one builder of it at a time)."""
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    stem = _stem(image)
    archive = _archive(image, cache)
    with binaries.locked(cache / f".{stem}.lock"):
        if archive.exists():
            return archive
        with tempfile.TemporaryDirectory(prefix="kubetrain-image-", dir=cache) as tmp:
            work = pathlib.Path(tmp)
            rootfs = work / "rootfs"
            _rootfs(image, rootfs)
            _write_archive(image, rootfs, work, archive.with_suffix(".partial"))
            archive.with_suffix(".partial").rename(archive)
        # Earlier builds of this name only: ``NAME-<16 hex>.tar`` (a glob's ``NAME-*`` also takes
        # another image whose name begins with this one's and a hyphen).
        own = re.compile(re.escape(stem) + r"-[0-9a-f]{16}\.tar")
        for stale in cache.iterdir():
            if stale != archive and own.fullmatch(stale.name):
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
                image.suite,
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
    if image.wheels_from is not None or image.requirements or image.sdists:
        _install_venv(image, rootfs)
    for command in image.fixes:
        _run(["chroot", str(rootfs), "sh", "-c", command], f"{command!r} in {image.ref}")
    shutil.rmtree(rootfs / "src", ignore_errors=True)


def _wheel_target(python: str) -> tuple[str, ...]:
    """pip's options for the wheels of the image's Python (pip does not infer manylinux_2_27 from
    manylinux_2_28, and TensorFlow's wheels are 2_27)."""
    abi = "cp" + python.replace(".", "")
    return (
        "--only-binary=:all:",
        f"--python-version={python}",
        "--implementation=cp",
        f"--abi={abi}",
        "--abi=abi3",
        "--abi=none",
        *(
            f"--platform={p}_x86_64"
            for p in ("manylinux2014", "manylinux_2_17", "manylinux_2_27", "manylinux_2_28")
        ),
    )


def _install_venv(image: Image, rootfs: pathlib.Path) -> None:
    """Gather the wheels here (built or downloaded); install them offline into the image's venv."""
    wheels = rootfs / "wheels"
    wanted = list(image.requirements)
    if image.wheels_from is not None:
        # pip builds a local project in its tree (build/): one build of it at a time.
        with binaries.locked(cache_dir() / ".kubetrain-wheel.lock"):
            _run(
                [
                    "python3",
                    "-m",
                    "pip",
                    "wheel",
                    "--quiet",
                    "--wheel-dir",
                    str(wheels),
                    str(image.wheels_from),
                ],
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
                *_wheel_target(image.python),
                "--dest",
                str(wheels),
                *image.requirements,
            ],
            f"pip download for {image.ref}",
        )
    if image.sdists:
        constraints = wheels / "build-constraints.txt"
        wheels.mkdir(parents=True, exist_ok=True)
        constraints.write_text("".join(f"{c}\n" for c in image.build_constraints))
        _run(
            [
                "env",
                f"PIP_CONSTRAINT={constraints}",
                "python3",
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--wheel-dir",
                str(wheels),
                *image.sdists,
            ],
            f"pip wheel of {', '.join(image.sdists)} for {image.ref}",
        )
        constraints.unlink()
        wanted += [s.split("==")[0] for s in image.sdists]
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
                    "io.containerd.image.name": ref,
                    "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1],
                },
            }
            for ref in (image.ref, *image.aliases)
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
