"""A real multi-replica training run on this machine per framework, through ``kubetrain run --local``.

Each job trains a small linear model (y = 3x + 2) with the framework's own collectives — gloo's
``all_reduce`` under DDP, a ``psum`` across JAX processes, MultiWorkerMirroredStrategy's
``all_reduce``, ``MPI_Allreduce`` over ``mpirun``'s ranks — and reports each step to
``KUBETRAIN_PROGRESS_FILE``. Its program reads how many times the job has restarted
(``KUBETRAIN_RESTARTS``, the restart env every main container gets) and, as a chaos monkey would:

- first run: the last rank dies at step 5 with exit code 137; the job's failure rule ``crashed``
  (any non-zero exit code: Restart, scope Job) restarts every replica;
- second run: rank 0 stops at step 5 and never reports again; the others wait in the collective;
  ``progress.deadlineSeconds`` (10) later the runner's agent finds the rank hung, and the step
  restarts the job again;
- third run: it trains to the end.

What each test asserts is what the operator's decisions and the framework did: the job
Succeeded after exactly those two restarts, charged as they were (the rule's failure with exit
code 137, then ``ProgressDeadlineExceeded``), every rank of the last run saw its loss fall more
than tenfold and ended with the same weights, and the job's progress reached the last step.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from testkit import localrun
from testkit.builders import a_job

from kubetrain.api import v1beta1

TIMEOUT = 240.0
STEPS = 30
# What the job's program does to itself on each run, by the restarts so far (the chaos above).
CHAOS = f"""
import os, sys, time
RESTARTS = int(os.environ["KUBETRAIN_RESTARTS"])
STEPS = {STEPS}


def report(step, loss):
    with open(os.environ["KUBETRAIN_PROGRESS_FILE"], "w") as f:
        f.write(f"step={{step}} total={STEPS} loss={{loss:.6f}}\\n")


def chaos(step, rank, world):
    if step == 5 and RESTARTS == 0 and rank == world - 1:
        print(f"rank {{rank}}: dying at step {{step}}", flush=True)
        os._exit(137)
    if step == 5 and RESTARTS == 1 and rank == 0:
        print(f"rank {{rank}}: stuck at step {{step}}", flush=True)
        time.sleep(3600)
"""
RESULT = (
    'print("KUBETRAIN-RESULT " + json.dumps({"rank": rank, "restarts": RESTARTS, "first": first, '
    '"final": final, "weights": weights}), flush=True)\n'
)

TORCH = (
    CHAOS
    + """
import datetime, json
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
x = torch.randn(64)
y = 3 * x + 2
w, b = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
first = None
for step in range(1, STEPS + 1):
    loss = ((x * w + b - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in (w, b):
            dist.all_reduce(p.grad)
            p -= 0.1 * p.grad / world
            p.grad.zero_()
    first = loss.item() if first is None else first
    final = loss.item()
    report(step, final)
    chaos(step, rank, world)
weights = [round(w.item(), 6), round(b.item(), 6)]
"""
    + RESULT
)

JAX = (
    CHAOS
    + """
import json
import jax
import jax.numpy as jnp

jax.distributed.initialize(
    coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
    num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
    process_id=int(os.environ["JAX_PROCESS_ID"]),
    initialization_timeout=60,
)
rank, world = jax.process_index(), jax.process_count()
x = jax.random.normal(jax.random.PRNGKey(rank), (64,))
y = 3 * x + 2
params = jnp.zeros(2)


def loss_of(p):
    return jnp.mean((x * p[0] + p[1] - y) ** 2)


total = jax.pmap(lambda g: jax.lax.psum(g, "i"), axis_name="i")
first = None
for step in range(1, STEPS + 1):
    loss, grad = jax.value_and_grad(loss_of)(params)
    grad = total(grad[None])[0] / world
    params = params - 0.1 * grad
    first = float(loss) if first is None else first
    final = float(loss)
    report(step, final)
    chaos(step, rank, world)
weights = [round(float(v), 6) for v in params]
"""
    + RESULT
)

TENSORFLOW = (
    CHAOS
    + """
import json
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
r = strategy.cluster_resolver
rank, world = (0 if r.task_type == "chief" else r.task_id + 1), strategy.num_replicas_in_sync
with strategy.scope():
    w = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    b = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
tf.random.set_seed(rank)
x = tf.random.normal((64,))
y = 3.0 * x + 2.0


@tf.function
def train_step():
    def replica():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x * w + b - y) ** 2)
        grads = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, tape.gradient(loss, [w, b])
        )
        w.assign_sub(0.1 * grads[0] / world)
        b.assign_sub(0.1 * grads[1] / world)
        return loss

    return strategy.run(replica)


first = None
for step in range(1, STEPS + 1):
    final = float(train_step())
    first = final if first is None else first
    report(step, final)
    chaos(step, rank, world)
weights = [round(float(w.numpy()), 4), round(float(b.numpy()), 4)]
"""
    + RESULT
)

MPI = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, world, step, i, restarts = atoi(getenv("KUBETRAIN_RESTARTS"));
    double w = 0, b = 0, first = -1, loss = 0, g[2], sum[2], x[64], y[64];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    srand(rank + 1);
    for (i = 0; i < 64; i++) { x[i] = 2.0 * rand() / RAND_MAX - 1; y[i] = 3 * x[i] + 2; }
    for (step = 1; step <= @STEPS@; step++) {
        loss = g[0] = g[1] = 0;
        for (i = 0; i < 64; i++) {
            double e = x[i] * w + b - y[i];
            loss += e * e / 64; g[0] += 2 * e * x[i] / 64; g[1] += 2 * e / 64;
        }
        MPI_Allreduce(g, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        w -= 0.1 * sum[0] / world; b -= 0.1 * sum[1] / world;
        if (first < 0) first = loss;
        if (rank == 0) {
            FILE *f = fopen(getenv("KUBETRAIN_PROGRESS_FILE"), "w");
            fprintf(f, "step=%d total=@STEPS@ loss=%f\n", step, loss); fclose(f);
        }
        if (step == 5 && restarts == 0 && rank == world - 1) { printf("rank %d: dying\n", rank); fflush(stdout); _exit(137); }
        if (step == 5 && restarts == 1 && rank == 0) { printf("rank %d: stuck\n", rank); fflush(stdout); sleep(3600); }
    }
    printf("KUBETRAIN-RESULT {\"rank\": %d, \"restarts\": %d, \"first\": %f, \"final\": %f, "
           "\"weights\": [%.6f, %.6f]}\n", rank, restarts, first, loss, w, b);
    MPI_Finalize();
    return 0;
}
""".replace("@STEPS@", str(STEPS))


# Elastic PyTorch under torchrun: the world re-forms after a pod is replaced alone (scope Pod), so
# the program keeps its step and weights in a checkpoint on a volume both pods mount, and kills
# its agent once per run of the job (a marker on that volume), whichever process it is then.
ELASTIC = f"""
import datetime, json, os, signal, time
from pathlib import Path
import torch
import torch.distributed as dist

STEPS = {STEPS}
SHARED = Path(os.environ["SHARED"])
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
ckpt = SHARED / "ckpt.pt"
state = torch.load(ckpt) if ckpt.exists() else {{"step": 0, "w": 0.0, "b": 0.0, "first": None}}
torch.manual_seed(rank)
x = torch.randn(64)
y = 3 * x + 2
w = torch.tensor([state["w"]], requires_grad=True)
b = torch.tensor([state["b"]], requires_grad=True)
first = state["first"]
print(f"rank {{rank}} of {{world}} resumes after step {{state['step']}}", flush=True)


def once(name):
    marker = SHARED / name
    if marker.exists():
        return False
    marker.touch()
    return True


for step in range(state["step"] + 1, STEPS + 1):
    loss = ((x * w + b - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in (w, b):
            dist.all_reduce(p.grad)
            p -= 0.1 * p.grad / world
            p.grad.zero_()
    first = loss.item() if first is None else first
    final = loss.item()
    if rank == 0:
        torch.save({{"step": step, "w": w.item(), "b": b.item(), "first": first}}, SHARED / "tmp.pt")
        os.replace(SHARED / "tmp.pt", ckpt)
    with open(os.environ["KUBETRAIN_PROGRESS_FILE"], "w") as f:
        f.write(f"step={{step}} total={{STEPS}} loss={{final:.6f}}\\n")
    if step == 5 and rank == world - 1 and once("died"):
        print(f"rank {{rank}}: killing its torchrun agent at step {{step}}", flush=True)
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)
    time.sleep(0.1)
weights = [round(w.item(), 6), round(b.item(), 6)]
print("KUBETRAIN-RESULT " + json.dumps({{"rank": rank, "restarts": 2, "first": first, "final": final,
      "weights": weights}}), flush=True)
"""


def chaotic(job: v1beta1.TrainingJob) -> v1beta1.TrainingJob:
    """The job's rules: any crash restarts every replica; a rank whose step stands 10 s is hung."""
    rule = v1beta1.FailureRule(
        name="crashed",
        action=v1beta1.FailureAction.RESTART,
        on_exit_codes=v1beta1.ExitCodeMatch(operator=v1beta1.ExitCodeOperator.NOT_IN, values=(0,)),
    )
    specs = {
        k: attrs.evolve(s, restart_policy=v1beta1.RestartPolicy.NEVER)
        for k, s in job.spec.replica_specs.items()
    }
    spec = attrs.evolve(
        job.spec,
        replica_specs=specs,
        failure_policy=v1beta1.FailurePolicy(rules=(rule,), restart_scope=v1beta1.RestartScope.JOB),
        progress=v1beta1.ProgressSpec(deadline_seconds=10, startup_grace_seconds=0),
    )
    return attrs.evolve(job, spec=spec)


def check(ran: localrun.Ran, ranks: int) -> None:
    status = ran.outcome.job.status
    reasons = [f.reason for f in status.failures]
    # A crash, then a hang; on a loaded machine a restarted world can stand past the 10 s
    # deadline once more while it meets again, which is a hang too, and restarts by the same rule.
    assert status.restarts.total >= 2, reasons
    assert status.failures[0].rule == "crashed", reasons
    assert any(f.exit_code == 137 for f in status.failures if f.rule == "crashed")
    assert "ProgressDeadlineExceeded" in reasons
    said = [json.loads(line.split(" ", 1)[1]) for line in ran.lines() if line.startswith("KUBETRAIN-RESULT ")]
    results = [r for r in said if r["restarts"] == status.restarts.total]  # the last attempt's
    assert sorted(r["rank"] for r in results) == list(range(ranks))
    for r in results:
        assert r["final"] < r["first"] / 10, r  # the loss went down
    assert len({tuple(r["weights"]) for r in results}) == 1  # every rank ends with the same model
    assert status.progress is not None
    assert status.progress.step == STEPS


def program(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "train.py"
    path.write_text(text)
    return [sys.executable, "-P", str(path)]


def test_torch_ddp_trains_restarts_by_its_rule_and_is_found_hung(torch_version: str, tmp_path: Path) -> None:
    tmpl = localrun.with_command("pytorch", program(tmp_path, TORCH), {"GLOO_SOCKET_IFNAME": "lo"})
    job = a_job("ddp").framework("pytorch").replicas("Master", 1, tmpl=tmpl).replicas("Worker", 1, tmpl=tmpl)
    check(localrun.run(chaotic(job.build()), tmp_path, timeout=TIMEOUT), ranks=2)


def test_jax_trains_restarts_by_its_rule_and_is_found_hung(jax_version: str, tmp_path: Path) -> None:
    tmpl = localrun.with_command("jax", program(tmp_path, JAX), {"JAX_PLATFORMS": "cpu"})
    job = a_job("jx").framework("jax").replicas("Worker", 2, tmpl=tmpl)
    check(localrun.run(chaotic(job.build()), tmp_path, timeout=TIMEOUT), ranks=2)


def test_tensorflow_multi_worker_trains_restarts_by_its_rule_and_is_found_hung(
    tensorflow_version: str, tmp_path: Path
) -> None:
    env = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    tmpl = localrun.with_command("tensorflow", program(tmp_path, TENSORFLOW), env)
    job = a_job("mw").framework("tensorflow").replicas("Chief", 1, tmpl=tmpl).replicas("Worker", 1, tmpl=tmpl)
    check(localrun.run(chaotic(job.build()), tmp_path, timeout=TIMEOUT), ranks=2)


@pytest.mark.parametrize("slots", [2])
def test_open_mpi_trains_restarts_by_its_rule_and_is_found_hung(
    slots: int, mpirun: str, mpicc: str, tmp_path: Path
) -> None:
    source, binary = tmp_path / "train.c", tmp_path / "train"
    source.write_text(MPI)
    subprocess.run([mpicc, "-O2", "-o", str(binary), str(source)], check=True, timeout=60)
    ranks = 2 * slots
    argv = [mpirun, "--allow-run-as-root", "-np", str(ranks), "-bind-to", "none", str(binary)]
    job = (
        a_job("mp")
        .framework("mpi", options={"slotsPerWorker": slots})
        .replicas("Launcher", 1, tmpl=localrun.with_command("mpi", argv))
        .replicas("Worker", 2, tmpl=localrun.with_command("mpi", ["/usr/sbin/sshd", "-De"]))
    )
    check(localrun.run(chaotic(job.build()), tmp_path, timeout=TIMEOUT), ranks=ranks)


def test_elastic_torch_replaces_a_lost_worker_alone_and_training_carries_on(
    torch_version: str, tmp_path: Path
) -> None:
    tmpl = localrun.with_command(
        "pytorch",
        [str(Path(sys.executable).with_name("torchrun")), *program(tmp_path, ELASTIC)[2:]],
        {"GLOO_SOCKET_IFNAME": "lo", "SHARED": "/shared"},
        volumes=[{"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}}],
    )
    tmpl["spec"]["containers"][0]["volumeMounts"] = [{"name": "shared", "mountPath": "/shared"}]
    elastic = v1beta1.ElasticPolicy(min_replicas=2, max_replicas=2, rdzv_conf={"last_call_timeout": "1"})
    job = a_job("el").framework("pytorch", pytorch=v1beta1.PyTorchOptions(elastic=elastic))
    job = chaotic(job.replicas("Worker", 2, tmpl=tmpl).build())
    # Elastic: the lost pod alone is replaced (scope Pod). No hang deadline: while a world
    # re-forms every rank waits in torchrun's rendezvous, its step still, and a deadline shorter
    # than the rendezvous would find them all hung (the hang path is DDP's, above).
    spec = attrs.evolve(
        job.spec,
        failure_policy=attrs.evolve(job.spec.failure_policy, restart_scope=None),
        progress=v1beta1.ProgressSpec(),
    )
    job = attrs.evolve(job, spec=spec)

    ran = localrun.run(job, tmp_path, timeout=TIMEOUT)

    status = ran.outcome.job.status
    assert any(f.rule == "crashed" and f.exit_code == 137 for f in status.failures), status.failures
    assert status.restarts.total == 1, status.failures  # the lost worker, once
    said = [json.loads(line.split(" ", 1)[1]) for line in ran.lines() if line.startswith("KUBETRAIN-RESULT ")]
    assert sorted(r["rank"] for r in said) == [0, 1]
    for r in said:
        assert r["final"] < r["first"] / 10, r  # the loss went down, across every world
    assert len({tuple(r["weights"]) for r in said}) == 1
    assert status.progress is not None
    assert status.progress.step == STEPS
