"""TensorFlow: TF_CONFIG read by TensorFlow's own cluster resolver, and a collective across workers.

TFConfigClusterResolver is what every tf.distribute strategy builds its cluster from;
MultiWorkerMirroredStrategy then starts a gRPC server per replica from the same
TF_CONFIG and all-reduces across them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from testkit import replicas
from testkit.builders import a_job

from kubetrain.api import v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import tensorflow

TIMEOUT = 120.0
IMAGE_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}

RESOLVE = """\
import json
import tensorflow as tf

r = tf.distribute.cluster_resolver.TFConfigClusterResolver()
in_cluster = r.task_type in r.cluster_spec().jobs
print(json.dumps({"cluster": r.cluster_spec().as_dict(), "task_type": r.task_type, "task_id": r.task_id,
                  "master": r.master() if in_cluster else None}))
"""

ALL_REDUCE = """\
import json
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
r = strategy.cluster_resolver


def value():
    return tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group + 1, tf.float32)


total = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(value), axis=None)
print(json.dumps({"task_type": r.task_type, "task_id": r.task_id,
                  "replicas": strategy.num_replicas_in_sync, "sum": float(total)}))
"""


def run(
    job: v1beta1.TrainingJob, program: str, processes: replicas.Processes, workdir: Path
) -> tuple[replicas.LocalJob, list[tuple[replicas.Replica, Any]]]:
    local = replicas.localize(
        render.render(job, tensorflow.FRAMEWORK), container="tensorflow", workdir=workdir
    )
    for r in local.replicas:
        path = r.root / "train.py"
        path.write_text(program)
        processes.start(r, [sys.executable, "-P", str(path)], extra=IMAGE_ENV)
    finished = processes.wait(TIMEOUT)
    outs = []
    for f in finished:
        (line,) = [ln for ln in f.stdout.splitlines() if ln.startswith("{")]
        outs.append((f.replica, json.loads(line)))
    return local, outs


def test_cluster_resolver_reads_tf_config(
    tensorflow_version: str, processes: replicas.Processes, tmp_path: Path
) -> None:
    job = (
        a_job("tf")
        .framework("tensorflow")
        .replicas("Chief", 1)
        .replicas("Worker", 2)
        .replicas("PS", 1)
        .replicas("Evaluator", 1)
        .build()
    )
    local, outs = run(job, RESOLVE, processes, tmp_path)

    address = {r.name: f"{r.address}:{local.ports[tensorflow.FRAMEWORK.port]}" for r in local.replicas}
    expected = {
        "chief": [address["tf-chief-0"]],
        "worker": [address["tf-worker-0"], address["tf-worker-1"]],
        "ps": [address["tf-ps-0"]],
    }
    for replica, out in outs:
        assert out["cluster"] == expected  # the evaluator is no member of the training cluster
        assert (out["task_type"], out["task_id"]) == (replica.type, replica.index)
        if replica.type != "evaluator":
            assert out["master"] == address[replica.name]  # each task finds its own address


def test_multi_worker_mirrored_all_reduce(
    tensorflow_version: str, processes: replicas.Processes, tmp_path: Path
) -> None:
    # Each gRPC server listens on its port at every address, so the two replicas get two
    # ports (replicaSpecs[].port) as they would share none here.
    job = a_job("mw").framework("tensorflow").replicas("Chief", 1).replicas("Worker", 1, port=2223).build()
    _, outs = run(job, ALL_REDUCE, processes, tmp_path)

    assert sorted((o["task_type"], o["task_id"]) for _, o in outs) == [("chief", 0), ("worker", 0)]
    for _, out in outs:
        assert out["replicas"] == 2
        assert out["sum"] == 1 + 2


def test_multi_worker_mirrored_all_reduce_with_a_master(
    tensorflow_version: str, processes: replicas.Processes, tmp_path: Path
) -> None:
    job = a_job("ms").framework("tensorflow").replicas("Master", 1).replicas("Worker", 1, port=2223).build()
    try:
        _, outs = run(job, ALL_REDUCE, processes, tmp_path)
    except replicas.ReplicaError as e:
        # Only the known reason makes this an expected failure (a plain AssertionError is not).
        assert "Disallowed task type found in cluster spec" in str(e)  # noqa: PT017
        raise

    assert [out["sum"] for _, out in outs] == [3.0, 3.0]
