"""Who may import whom among kubetrain's six packages, read from the source.

Every module of ``api``, ``operator``, ``client``, ``cli``, ``convert`` and ``devcluster`` is
parsed (``ast``, nothing imported) and each of its imports of kubetrain — at module level
and inside functions — is checked against :data:`RULES`. A rule is found by the longest
prefix of the importing module's name; what it lists ``may`` be imported anywhere, what it
lists ``lazily`` only inside a function (loaded when that verb runs, not at start-up).

:data:`PURE` is the part of the operator that the CLI and the converter use. It imports only
the API and itself, so no import of it can reach the runtime, the webhooks or the reconciler;
a subprocess then checks the same from the other side — ``kubetrain render``, ``convert``,
``submit``, ``migrate-storage`` and ``run --local`` run, and neither the runtime, the webhooks nor
aiohttp is in ``sys.modules``. The local runner (``operator/local``) is a second user of the
reconciler's shell: it takes observe (which reads only the Caches interface) and the pure parts;
the CLI loads it when ``run --local`` runs, the client when ``run_local`` is called. The dev cluster likewise takes from the operator only its certificates
(``pki``), the webhooks' names (``webhook_endpoints``) and pure parts, and every module of it
loaded (what ``kubetrain dev`` runs) leaves the runtime, the webhooks and aiohttp out. tests and
bench are outside the six packages and import what they test.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import yaml
from testkit import kube

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Rule(NamedTuple):
    may: tuple[str, ...]
    why: str
    lazily: tuple[str, ...] = ()


# The operator's pure parts: no cluster, no runtime. The CLI and the converter may use them.
PURE = (
    "kubetrain.operator.accelerators",
    "kubetrain.operator.agent",
    "kubetrain.operator.conditions",
    "kubetrain.operator.expansion",
    "kubetrain.operator.frameworks",
    "kubetrain.operator.intake",
    "kubetrain.operator.lifecycle",
    "kubetrain.operator.policies",
    "kubetrain.operator.render",
    "kubetrain.operator.resources",
    "kubetrain.operator.scheduling",
    "kubetrain.operator.tensorboard",
    "kubetrain.operator.webhook_endpoints",
)
# The local runner (kubetrain run --local): the pure parts, and the shell's observe, which reads
# the Caches interface alone.
LOCAL = "kubetrain.operator.local"
OBSERVE = "kubetrain.operator.observe"
# What the dev cluster takes from the operator: the pure parts, and the certificates it issues.
DEVCLUSTER = ("kubetrain.api", "kubetrain.devcluster", "kubetrain.operator.pki", *PURE)
CLI = ("kubetrain.api", "kubetrain.client", "kubetrain.cli", "kubetrain.operator.policies")
CLI_TOOLS = ("kubetrain.convert", *PURE, LOCAL)

RULES: dict[str, Rule] = {
    "kubetrain.api": Rule(
        ("kubetrain.api",),
        "the API is what every package agrees on, so it depends on none of them",
    ),
    "kubetrain.operator": Rule(
        ("kubetrain.api", "kubetrain.operator"),
        "the operator runs in the cluster on the API alone: never the client, the CLI, the converter "
        "or the dev cluster",
    ),
    **{
        pure: Rule(
            ("kubetrain.api", *PURE),
            "the operator's pure parts (what the CLI and the converter use) import only one another "
            "and the API: never the runtime, the webhooks or the reconciler",
        )
        for pure in PURE
    },
    OBSERVE: Rule(
        ("kubetrain.api", *PURE),
        "observe is the shell's first call, over the Caches interface: the reconciler, the tests' World "
        "and the local runner each bring their caches, and it imports none of the runtime",
    ),
    LOCAL: Rule(
        ("kubetrain.api", *PURE, OBSERVE, LOCAL),
        "a local run is a second user of the reconciler's shell (observe, the step, render) over "
        "processes: never the runtime, the webhooks or the reconciler, and nothing of a cluster",
    ),
    "kubetrain.client": Rule(
        ("kubetrain.api", "kubetrain.client"),
        "a notebook installs kubetrain for the client: it must not drag the operator in; run_local "
        "loads the local runner, and the expansion and intake a job is read with, only when called",
        lazily=(LOCAL, "kubetrain.operator.expansion", "kubetrain.operator.intake"),
    ),
    "kubetrain.convert": Rule(
        ("kubetrain.api", "kubetrain.convert", "kubetrain.operator.frameworks", "kubetrain.operator.intake"),
        "old kinds become TrainingJobs with the frameworks' defaults, checked as admission checks "
        "them (intake), with no cluster: no runtime, webhooks or reconciler",
    ),
    "kubetrain.cli": Rule(
        CLI,
        "the job verbs are built on the client and start without the operator; render, manifests "
        "(the lifecycle's pure table), convert, submit's framework check and run --local load the "
        "converter, the operator's pure parts and its local runner when they run",
        lazily=CLI_TOOLS,
    ),
    "kubetrain.cli.dev": Rule(
        CLI,
        "only the dev verbs start a local cluster, and only when they run",
        lazily=(*CLI_TOOLS, "kubetrain.devcluster"),
    ),
    "kubetrain.devcluster": Rule(
        DEVCLUSTER,
        "the dev cluster deploys the operator (its manifests, certificates, webhooks' names and "
        "images) but runs none of it in process: never the runtime, the webhooks or the reconciler; "
        "nothing imports it back but the dev verbs",
    ),
}


class Module(NamedTuple):
    name: str
    path: pathlib.Path
    source: str
    package: bool  # an __init__.py


class Import(NamedTuple):
    target: str
    line: int
    lazy: bool  # inside a function


def packages() -> dict[str, str]:
    """kubetrain's packages and their folders, as pyproject installs them."""
    found: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    return found


def read_modules() -> list[Module]:
    modules = []
    for package, folder in packages().items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join((package, *(parts[:-1] if is_package else parts)))
            modules.append(Module(name, path, path.read_text(), is_package))
    return modules


def imports(module: Module, known: set[str]) -> Iterator[Import]:
    """Every import of ``module``: ``from a.b import c`` is of ``a.b.c`` where that is a module."""
    tree = ast.parse(module.source, str(module.path))

    def walk(node: ast.AST, lazy: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                yield from (Import(a.name, child.lineno, lazy) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = _absolute(module, child.module, child.level)
                for a in child.names:
                    sub = f"{base}.{a.name}"
                    yield Import(sub if sub in known else base, child.lineno, lazy)
            yield from walk(child, lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    return walk(tree, False)


def _absolute(module: Module, name: str | None, level: int) -> str:
    if not level:
        return name or ""
    parts = module.name.split(".")
    if not module.package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, name] if name else parts)


def rule_for(name: str, rules: Mapping[str, Rule]) -> Rule:
    key = max((k for k in rules if _under(name, k)), key=len)
    return rules[key]


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(modules: Iterable[Module], rules: Mapping[str, Rule] = RULES) -> list[str]:
    """One ``file:line: ...`` line per import that breaks its module's rule."""
    modules = list(modules)
    known = {m.name for m in modules}
    found = []
    for module in modules:
        rule = rule_for(module.name, rules)
        for imp in imports(module, known):
            if not _under(imp.target, "kubetrain") or imp.target == "kubetrain":
                continue
            if any(_under(imp.target, p) for p in rule.may):
                continue
            where = (
                f"{module.path.relative_to(ROOT) if module.path.is_absolute() else module.path}:{imp.line}"
            )
            if not imp.lazy and any(_under(imp.target, p) for p in rule.lazily):
                found.append(
                    f"{where}: {module.name} imports {imp.target} at start-up (only inside a verb's function): {rule.why}"
                )
            elif not (imp.lazy and any(_under(imp.target, p) for p in rule.lazily)):
                found.append(f"{where}: {module.name} imports {imp.target}: {rule.why}")
    return found


def test_every_import_keeps_to_the_layers() -> None:
    found = violations(read_modules())
    for line in found:
        print(line)
    assert not found, f"{len(found)} import(s) across the layers:\n" + "\n".join(found)


def test_the_checker_catches_imports_across_the_layers() -> None:
    def module(name: str, source: str) -> Module:
        return Module(name, pathlib.Path(name.replace(".", "/") + ".py"), textwrap.dedent(source), False)

    synthetic = [
        module("kubetrain.client.leaky", "from kubetrain.operator.runtime import client\n"),
        module("kubetrain.api.upward", "import kubetrain.client.jobs\n"),
        module(
            "kubetrain.cli.eager",
            """\
            from kubetrain.operator import render

            def fine():
                from kubetrain.operator import intake

            def devtools():
                from kubetrain.devcluster import dev
            """,
        ),
        module("kubetrain.operator.render", "from kubetrain.operator.webhooks import validating\n"),
        module(
            "kubetrain.convert.checked", "def f():\n    from kubetrain.operator.webhooks import validating\n"
        ),
        module("kubetrain.devcluster.deployed", "from kubetrain.operator import pki, webhooks\n"),
        module(
            "kubetrain.devcluster.started", "def f():\n    from kubetrain.operator.runtime import client\n"
        ),
        module(
            "kubetrain.operator.fine",
            "from kubetrain.api import naming\nfrom kubetrain.operator import render\n",
        ),
    ]
    found = violations([*read_modules(), *synthetic])
    mine = [line for line in found if line.split(":")[0].startswith("kubetrain/")]
    assert [line.split(": ")[0] + ": " + line.split(": ")[1] for line in mine] == [
        "kubetrain/client/leaky.py:1: kubetrain.client.leaky imports kubetrain.operator.runtime.client",
        "kubetrain/api/upward.py:1: kubetrain.api.upward imports kubetrain.client.jobs",
        "kubetrain/cli/eager.py:1: kubetrain.cli.eager imports kubetrain.operator.render at start-up "
        "(only inside a verb's function)",
        "kubetrain/cli/eager.py:7: kubetrain.cli.eager imports kubetrain.devcluster.dev",
        "kubetrain/operator/render.py:1: kubetrain.operator.render imports kubetrain.operator.webhooks.validating",
        "kubetrain/convert/checked.py:2: kubetrain.convert.checked imports kubetrain.operator.webhooks.validating",
        "kubetrain/devcluster/deployed.py:1: kubetrain.devcluster.deployed imports kubetrain.operator.webhooks",
        "kubetrain/devcluster/started.py:2: kubetrain.devcluster.started imports kubetrain.operator.runtime.client",
    ]


def test_the_table_names_the_packages_and_modules_there_are() -> None:
    assert {k for k in RULES if k.count(".") == 1} == set(packages())
    known = {m.name for m in read_modules()}
    for name in (*RULES, *PURE):
        assert name in known, f"{name} is in the table but not in the source"


def test_render_convert_submit_migrate_storage_and_run_local_load_no_runtime_webhooks_or_aiohttp(
    tmp_path: pathlib.Path,
) -> None:
    kubeconfig, _ = kube.unreachable_kubeconfig(tmp_path)
    refused = tmp_path / "refused.yaml"  # a framework's rule, checked before a cluster is looked for
    job = yaml.safe_load((ROOT / "samples" / "v1beta1" / "tensorflow-ps.yaml").read_text())
    job["spec"]["replicaSpecs"]["Launcher"] = copy.deepcopy(job["spec"]["replicaSpecs"]["Worker"])
    refused.write_text(yaml.safe_dump(job))
    # A local run of one replica that exits at once: the runner's modules, loaded and run.
    one = tmp_path / "local.yaml"
    container = {"name": "main", "image": "none", "command": ["true"]}
    one.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "training.kubetrain.dev/v1beta1",
                "kind": "TrainingJob",
                "metadata": {"name": "one"},
                "spec": {
                    "framework": {"name": "generic"},
                    "replicaSpecs": {"Worker": {"template": {"spec": {"containers": [container]}}}},
                },
            }
        )
    )
    runs = [
        ["render", str(ROOT / "samples" / "v1beta1" / "pytorch-ddp.yaml")],
        ["render", str(ROOT / "samples" / "v1alpha1" / "tfjob-master-worker-ps.yaml")],
        ["convert", str(ROOT / "samples" / "legacy" / "kubeflow-pytorchjob.yaml")],
        ["submit", str(refused), f"--kubeconfig={kubeconfig}"],
        ["submit", str(ROOT / "samples" / "v1beta1" / "pytorch-ddp.yaml"), f"--kubeconfig={kubeconfig}"],
        ["migrate-storage", f"--kubeconfig={kubeconfig}"],
        ["run", "--local", str(one), f"--run-dir={tmp_path / 'run'}"],
    ]
    out = _python(
        f"""\
        import contextlib, io
        import kubetrain.cli.main, kubetrain.convert
        from kubetrain.cli import main
        out["codes"], out["errors"] = [], []
        for argv in {runs!r}:
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                out["codes"].append(main.main(argv))
            out["errors"].append(err.getvalue())
        """,
        RUNTIME,
    )
    assert out["codes"] == [0, 0, 0, 1, 1, 1, 0], out["errors"]
    assert "spec.replicaSpecs.Launcher: tensorflow has no replica type Launcher" in out["errors"][3]
    assert "cannot reach the cluster" in out["errors"][4]
    assert "cannot reach the cluster" in out["errors"][5]
    assert out["loaded"] == []


def test_kubetrain_dev_loads_no_runtime_webhooks_or_aiohttp() -> None:
    # A dev verb that runs without a cluster (it loads kubetrain.devcluster.dev, as they all do),
    # then every module of the dev cluster.
    out = _python(
        """\
        import contextlib, importlib, io, pkgutil
        from kubetrain.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            out["code"] = main.main(["dev", "kubeconfig"])  # its path, or: no dev cluster is up
        out["dev"] = "kubetrain.devcluster.dev" in sys.modules
        import kubetrain.devcluster
        for m in pkgutil.iter_modules(kubetrain.devcluster.__path__):
            importlib.import_module("kubetrain.devcluster." + m.name)
        """,
        tuple(u for u in RUNTIME if u != "kubetrain.devcluster"),
    )
    assert out["code"] in (0, 1)
    assert out["dev"]
    assert out["loaded"] == []


def test_the_client_loads_nothing_of_the_operator_the_cli_or_the_dev_cluster() -> None:
    out = _python(
        "from kubetrain import client",
        ("kubetrain.operator", "kubetrain.cli", "kubetrain.convert", "kubetrain.devcluster", "aiohttp"),
    )
    assert out["loaded"] == []


# What the CLI's tools and the converter must not load (nor, with more reason, the client).
RUNTIME = (
    "kubetrain.operator.runtime",
    "kubetrain.operator.webhooks",
    "kubetrain.operator.trainingjob_controller",
    "kubetrain.devcluster",
    "aiohttp",
)


def _python(code: str, unwanted: tuple[str, ...]) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; ``out`` as it left it, and ``loaded``: the modules
    under ``unwanted`` in its ``sys.modules``."""
    probe = "\n".join(
        [
            "import json, sys",
            "out = {}",
            textwrap.dedent(code),
            f"unwanted = {unwanted!r}",
            "out['loaded'] = sorted(m for m in sys.modules if any(m == u or m.startswith(u + '.') for u in unwanted))",
            "print(json.dumps(out))",
        ]
    )
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return found
