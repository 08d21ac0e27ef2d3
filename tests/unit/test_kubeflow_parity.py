"""Parity with Kubeflow Training Operator v1: its defaults and env, as data, beside kubetrain's.

:data:`KUBEFLOW` holds, for each of Kubeflow v1's kinds, what Kubeflow does — read from
kubeflow/training-operator's sources, never from kubetrain's code: the defaults from
``pkg/apis/kubeflow.org/v1/*_types.go`` and ``*_defaults.go``, the env from each
controller's ``envvar.go`` (PyTorch, Paddle, JAX), ``tensorflow.go``, ``mxnet.go``,
``xgboost.go`` and ``mpijob_controller.go``, the success rule from the controllers'
``UpdateJobStatus``. Kubeflow v1 has no restart scope: a failed pod restarts alone.

The tables of docs/frameworks.md ("Parity with Kubeflow Training Operator v1") are read
too: each row's Kubeflow cell must say what these facts say, its kubetrain cell what the
framework does and renders, and a row whose two sides differ must be kept on purpose
(``kept: reason``). A row that says ``same`` or ``removed:`` must be the same. So the doc,
the facts and the code cannot drift apart.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import pytest
from testkit.builders import a_job

from kubetrain.api import v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import framework, registry

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "frameworks.md"
SECTION = "## Parity with Kubeflow Training Operator v1"
DEFAULT_ROWS = ("restart policy", "restart scope", "container", "port", "success")
WHYS = ("same", "removed:", "kept:")

Counts = Mapping[str, int]
Pods = frozenset[tuple[str, int]]


def every(counts: Counts, *types: str) -> Pods:
    """Every pod of the first of ``types`` the job has."""
    for t in types:
        if counts.get(t):
            return frozenset((t, i) for i in range(counts[t]))
    return frozenset()


@attrs.frozen(kw_only=True)
class Shape:
    """One job kubetrain renders for the comparison: replica counts and framework options."""

    counts: Mapping[str, int]
    options: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Kind:
    """What Kubeflow v1 does for one kind, and the jobs that show kubetrain's side."""

    framework: str
    restart_policy: str
    container: str
    port: str  # "`name` number", or "none"
    success: Callable[[Counts], Pods]
    env: frozenset[str]
    shapes: tuple[Shape, ...]


def _tf_success(c: Counts) -> Pods:
    # tfjob_controller: the Chief (or Master) when the job has one, else Worker 0 completing.
    chief = every(c, "Chief", "Master")
    return chief or frozenset({("Worker", 0)})


ELASTIC = v1beta1.PyTorchOptions(
    elastic=v1beta1.ElasticPolicy(min_replicas=1, max_replicas=3, rdzv_conf={"timeout": "60"}, max_restarts=3)
)

KUBEFLOW: Mapping[str, Kind] = {
    "TFJob": Kind(
        framework="tensorflow",
        restart_policy="Never",  # TFJobDefaultRestartPolicy
        container="tensorflow",
        port="`tfjob-port` 2222",
        success=_tf_success,
        env=frozenset({"TF_CONFIG"}),  # SetClusterSpec, distributed jobs only
        shapes=(
            Shape(counts={"Chief": 1, "Worker": 2, "PS": 1, "Evaluator": 1}),
            Shape(counts={"Master": 1, "Worker": 1}),
            Shape(counts={"Worker": 2, "PS": 1}),
        ),
    ),
    "PyTorchJob": Kind(
        framework="pytorch",
        restart_policy="OnFailure",  # PytorchJobDefaultRestartPolicy
        container="pytorch",
        port="`pytorchjob-port` 23456",
        success=lambda c: every(c, "Master") or every(c, "Worker"),
        # envvar.go, master.go (MASTER_*, PET_MASTER_*), elastic.go (PET_RDZV_*, PET_MAX_RESTARTS, PET_STANDALONE).
        env=frozenset(
            {
                "PYTHONUNBUFFERED",
                "MASTER_ADDR",
                "MASTER_PORT",
                "PET_MASTER_ADDR",
                "PET_MASTER_PORT",
                "WORLD_SIZE",
                "RANK",
                "PET_NPROC_PER_NODE",
                "PET_NODE_RANK",
                "PET_NNODES",
                "PET_RDZV_ENDPOINT",
                "PET_RDZV_BACKEND",
                "PET_RDZV_ID",
                "PET_RDZV_CONF",
                "PET_MAX_RESTARTS",
                "PET_STANDALONE",
            }
        ),
        shapes=(
            Shape(counts={"Master": 1, "Worker": 2}),
            Shape(counts={"Worker": 2}),
            Shape(counts={"Worker": 2}, options={"pytorch": ELASTIC}),
        ),
    ),
    "MXJob": Kind(
        framework="mxnet",
        restart_policy="Never",  # MXJobDefaultRestartPolicy
        container="mxnet",
        port="`mxjob-port` 9091",
        success=lambda c: every(c, "Scheduler"),  # "when scheduler is succeeded, the job is finished"
        # mxnet.go SetPodEnv, with addBytePSEnv's DMLC_WORKER_ID.
        env=frozenset(
            {
                "MX_CONFIG",
                "DMLC_PS_ROOT_PORT",
                "DMLC_PS_ROOT_URI",
                "DMLC_NUM_SERVER",
                "DMLC_NUM_WORKER",
                "DMLC_ROLE",
                "DMLC_USE_KUBERNETES",
                "DMLC_WORKER_ID",
            }
        ),
        shapes=(
            Shape(counts={"Scheduler": 1, "Server": 1, "Worker": 2}),
            Shape(counts={"Worker": 1}, options={"options": {"mode": "local"}}),
        ),
    ),
    "XGBoostJob": Kind(
        framework="xgboost",
        restart_policy="Never",  # XGBoostJobDefaultRestartPolicy
        container="xgboost",
        port="`xgboostjob-port` 9999",
        success=lambda c: every(c, "Master"),  # "when master is succeed, the job is finished"
        env=frozenset(
            {
                "MASTER_PORT",
                "MASTER_ADDR",
                "WORLD_SIZE",
                "RANK",
                "PYTHONUNBUFFERED",
                "WORKER_PORT",
                "WORKER_ADDRS",
            }
        ),
        shapes=(Shape(counts={"Master": 1, "Worker": 2}), Shape(counts={"Master": 1})),
    ),
    "PaddleJob": Kind(
        framework="paddle",
        restart_policy="OnFailure",  # PaddleJobDefaultRestartPolicy
        container="paddle",
        port="`master` 36543",
        success=lambda c: every(c, "Master") or every(c, "Worker"),
        env=frozenset(
            {
                "PYTHONUNBUFFERED",
                "PADDLE_JOB_ID",
                "PADDLE_NNODES",
                "PADDLE_MASTER",
                "POD_IP_DUMMY",
                "PADDLE_SERVER_NUM",
                "PADDLE_TRAINER_NUM",
            }
        ),
        shapes=(Shape(counts={"Worker": 2}), Shape(counts={"Master": 2, "Worker": 2})),
    ),
    "JAXJob": Kind(
        framework="jax",
        restart_policy="Never",  # JAXJobDefaultRestartPolicy
        container="jax",
        port="`jaxjob-port` 6666",
        success=lambda c: every(c, "Worker"),
        env=frozenset(
            {"PYTHONUNBUFFERED", "COORDINATOR_PORT", "COORDINATOR_ADDRESS", "NUM_PROCESSES", "PROCESS_ID"}
        ),
        shapes=(Shape(counts={"Worker": 2}),),
    ),
    "MPIJob": Kind(
        framework="mpi",
        restart_policy="Never",  # MPIJobDefaultRestartPolicy
        container="mpi",
        port="none",  # MPIJobDefaultPortName/Port are declared; SetDefaults_MPIJob sets no port
        success=lambda c: every(c, "Launcher"),
        # newLauncher; TARGET_DIR is on its kubectl-delivery init container.
        env=frozenset(
            {
                "OMPI_MCA_plm_rsh_agent",
                "OMPI_MCA_orte_default_hostfile",
                "NVIDIA_VISIBLE_DEVICES",
                "NVIDIA_DRIVER_CAPABILITIES",
                "I_MPI_HYDRA_BOOTSTRAP",
                "I_MPI_HYDRA_BOOTSTRAP_EXEC",
                "TARGET_DIR",
            }
        ),
        shapes=tuple(
            Shape(counts={"Launcher": 1, "Worker": 2}, options={"options": {"mpiImplementation": impl}})
            for impl in ("OpenMPI", "Intel", "MPICH")
        ),
    ),
}


# --- the doc's tables ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Row:
    kubeflow: str
    kubetrain: str
    why: str


def tables() -> dict[str, tuple[str, dict[str, Row]]]:
    """Kind -> (framework, rows by first cell) from the parity section of docs/frameworks.md."""
    text = DOC.read_text()
    assert SECTION in text, f"{DOC.name} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    out: dict[str, tuple[str, dict[str, Row]]] = {}
    for block in section.split("\n### ")[1:]:
        heading, _, body = block.partition("\n")
        m = re.fullmatch(r"(\w+) \(`([\w-]+)`\)", heading.strip())
        assert m, f"a parity heading must read 'Kind (`framework`)', not {heading!r}"
        rows: dict[str, Row] = {}
        for line in body.splitlines():
            if not line.startswith("|") or line.startswith("| ---") or line.startswith("| |"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            assert len(cells) == 4, f"{m[1]}: a row has four cells: {line}"
            key, kubeflow, kubetrain, why = cells
            assert key not in rows, f"{m[1]}: row {key} twice"
            rows[key] = Row(kubeflow=kubeflow, kubetrain=kubetrain, why=why)
        out[m[1]] = (m[2], rows)
    return out


TABLES = tables()


def kept_iff_different(kind: str, row: str, different: bool) -> None:
    why = TABLES[kind][1][row].why
    assert why.startswith(WHYS), f"{kind} {row}: why must start with same, removed: or kept:, not {why!r}"
    if different:
        assert why.startswith("kept:"), f"{kind} {row}: Kubeflow and kubetrain differ, so say why it is kept"
    else:
        assert not why.startswith("kept:") or row.startswith("`"), f"{kind} {row}: nothing differs: {why!r}"


# --- kubetrain's side ----------------------------------------------------------------------


def fw_of(kind: str) -> framework.Framework:
    return registry.default().get(KUBEFLOW[kind].framework)


def job_of(fw: framework.Framework, shape: Shape) -> v1beta1.TrainingJob:
    builder = a_job("kf").namespace("ml").uid("u-1").framework(fw.name, **shape.options)
    for rtype, n in shape.counts.items():
        builder = builder.replicas(rtype, n)
    return builder.build()


def success_pods(fw: framework.Framework, shape: Shape) -> Pods:
    policy = fw.success(job_of(fw, shape).spec)
    assert policy.operator is v1beta1.SuccessOperator.ALL
    return frozenset(
        (t.replica_type, i)
        for t in policy.targets
        for i in (range(shape.counts[t.replica_type]) if t.index is None else (t.index,))
    )


def env_names(fw: framework.Framework, shapes: tuple[Shape, ...]) -> frozenset[str]:
    names: set[str] = set()
    for shape in shapes:
        for o in render.render(job_of(fw, shape), fw):
            if o["kind"] == "Pod":
                main = framework.main_container(o, fw.container)
                assert main is not None
                names.update(e["name"] for e in main.get("env", []) if e["name"] not in render.RESTART_ENV)
    return frozenset(names)


# --- the tests -----------------------------------------------------------------------------


def test_the_doc_has_one_table_for_each_of_kubeflows_kinds() -> None:
    assert {k: fw for k, (fw, _) in TABLES.items()} == {k: v.framework for k, v in KUBEFLOW.items()}


@pytest.mark.parametrize("kind", sorted(KUBEFLOW))
def test_every_row_says_same_removed_or_kept(kind: str) -> None:
    for key, row in TABLES[kind][1].items():
        assert row.why.startswith(WHYS), f"{kind} {key}: {row.why!r}"
    assert set(DEFAULT_ROWS) <= set(TABLES[kind][1]), (
        f"{kind} lacks rows {set(DEFAULT_ROWS) - set(TABLES[kind][1])}"
    )


@pytest.mark.parametrize("kind", sorted(KUBEFLOW))
def test_defaults_are_kubeflows_or_kept_on_purpose(kind: str) -> None:
    kf, fw, rows = KUBEFLOW[kind], fw_of(kind), TABLES[kind][1]
    pairs = {
        "restart policy": (f"`{kf.restart_policy}`", f"`{fw.restart_policy.value}`"),
        # Kubeflow v1 restarts a failed pod alone, in place or by recreating it.
        "restart scope": ("`Pod`", f"`{fw.restart_scope.value}`"),
        "container": (f"`{kf.container}`", f"`{fw.container}`"),
        "port": (kf.port, f"`{fw.port_name}` {fw.port}"),
    }
    for key, (theirs, ours) in pairs.items():
        assert rows[key].kubeflow.startswith(theirs), (
            f"{kind} {key}: Kubeflow's is {theirs}: {rows[key].kubeflow!r}"
        )
        assert rows[key].kubetrain.startswith(ours), (
            f"{kind} {key}: kubetrain's is {ours}: {rows[key].kubetrain!r}"
        )
        kept_iff_different(kind, key, theirs != ours)


@pytest.mark.parametrize("kind", sorted(KUBEFLOW))
def test_the_success_rule_is_kubeflows_or_kept_on_purpose(kind: str) -> None:
    kf, fw = KUBEFLOW[kind], fw_of(kind)
    shapes = [s for s in kf.shapes if not s.options.get("pytorch")]  # Kubeflow's elastic rule is its own
    different = any(kf.success(s.counts) != success_pods(fw, s) for s in shapes)
    kept_iff_different(kind, "success", different)


@pytest.mark.parametrize("kind", sorted(KUBEFLOW))
def test_every_variable_of_either_side_has_a_row(kind: str) -> None:
    kf = KUBEFLOW[kind]
    ours = env_names(fw_of(kind), kf.shapes)
    rows = {k.strip("`") for k in TABLES[kind][1] if k.startswith("`")}
    assert rows == kf.env | ours, (
        f"{kind}: rows missing for {sorted((kf.env | ours) - rows)}, rows for nothing: {sorted(rows - kf.env - ours)}"
    )


@pytest.mark.parametrize("kind", sorted(KUBEFLOW))
def test_each_variable_is_set_as_kubeflow_sets_it_or_kept_on_purpose(kind: str) -> None:
    kf = KUBEFLOW[kind]
    ours = env_names(fw_of(kind), kf.shapes)
    for name in sorted(kf.env | ours):
        row = TABLES[kind][1][f"`{name}`"]
        theirs_set, ours_set = name in kf.env, name in ours
        assert row.kubeflow.startswith("set" if theirs_set else "not set"), f"{kind} {name}: {row.kubeflow!r}"
        assert row.kubetrain.startswith("set" if ours_set else "not set"), f"{kind} {name}: {row.kubetrain!r}"
        # Both set may still differ in value or in when (the row then says kept: and why).
        kept_iff_different(kind, f"`{name}`", theirs_set != ours_set)
