"""The realcode tier: real framework code meets at the rendezvous that kubetrain's env describes.

Each test runs a job through the product's local runner (``kubetrain run --local``, through
:mod:`testkit.localrun`): every replica a local process with exactly the env and files its Pod
would get, 127.0.0.1 and a port of its own, on the operator's own decisions; and checks what the
framework computed. The frameworks are dependencies of this tier, installed by `make realcode-deps`
(`make test` runs it): a missing one fails the test that needs it, it is never skipped.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# What `make realcode-deps` installs (pyproject's `realcode` extra, and Debian's packages).
PYTHON_PACKAGES = ("torch", "jax", "jaxlib", "tensorflow-cpu")
PROGRAMS = {
    "mpirun": "openmpi-bin",
    "mpicc": "libopenmpi-dev",
    "sshd": "openssh-server",
    "ssh": "openssh-client",
}


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _program(name: str) -> str | None:
    return shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/usr/bin") / name) if p.exists()), None
    )


def pytest_report_header() -> list[str]:
    found = [f"{p} {_version(p) or 'MISSING'}" for p in PYTHON_PACKAGES]
    mpirun = _program("mpirun")
    if mpirun:
        out = subprocess.run([mpirun, "--version"], capture_output=True, text=True, check=False).stdout
        found.append(out.splitlines()[0] if out else "mpirun: no version")
    else:
        found.append("mpirun MISSING")
    return ["realcode frameworks: " + ", ".join(found)]


def require_package(package: str) -> str:
    """The installed version of ``package``; fails (never skips) when it is missing."""
    version = _version(package)
    if version is None:
        pytest.fail(f"{package} is not installed in {sys.prefix}: run `make realcode-deps`", pytrace=False)
    return version


def require_program(name: str) -> str:
    """The path of program ``name``; fails (never skips) when it is missing."""
    path = _program(name)
    if path is None:
        package = PROGRAMS.get(name, name)
        pytest.fail(f"{name} not found: run `make realcode-deps` (Debian package {package})", pytrace=False)
    return path


@pytest.fixture(scope="session")
def torch_version() -> str:
    return require_package("torch")


@pytest.fixture(scope="session")
def jax_version() -> str:
    require_package("jaxlib")
    return require_package("jax")


@pytest.fixture(scope="session")
def tensorflow_version() -> str:
    return require_package("tensorflow-cpu")


@pytest.fixture(scope="session")
def mpirun() -> str:
    return require_program("mpirun")


@pytest.fixture(scope="session")
def mpicc() -> str:
    return require_program("mpicc")
