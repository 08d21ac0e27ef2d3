"""kubetrain installs as kubetrain.api and kubetrain.operator, and shadows nothing."""

import importlib.util
import operator
import pathlib
import sys

import kubetrain.api
import kubetrain.operator


def test_the_standard_librarys_operator_is_intact() -> None:
    assert operator.itemgetter(0)([1]) == 1
    assert pathlib.Path(operator.__file__).parent == pathlib.Path(pathlib.__file__).parent


def test_api_and_operator_are_not_top_level_modules() -> None:
    assert importlib.util.find_spec("api") is None
    spec = importlib.util.find_spec("operator")
    assert spec is not None
    assert spec.origin is not None
    assert "kubetrain" not in spec.origin
    assert "" not in sys.path
    assert str(pathlib.Path.cwd()) not in sys.path


def test_packages_are_typed() -> None:
    for package in (kubetrain.api, kubetrain.operator):
        assert (pathlib.Path(package.__file__).parent / "py.typed").exists()


def test_every_source_package_is_installed() -> None:
    # pyproject lists packages by hand (package-dir renames them); a forgotten one would
    # work from a checkout and be missing from the wheel.
    root = pathlib.Path(__file__).resolve().parents[2]
    for top, name in (("api", "kubetrain.api"), ("operator", "kubetrain.operator")):
        for init in (root / top).rglob("__init__.py"):
            dotted = ".".join((name, *init.parent.relative_to(root / top).parts))
            assert importlib.util.find_spec(dotted) is not None, f"{dotted} is not installed"
