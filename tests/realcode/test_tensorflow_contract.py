"""TensorFlow: TF_CONFIG read by TensorFlow's own cluster resolver, and a collective across workers.

TFConfigClusterResolver is what every tf.distribute strategy builds its cluster from;
MultiWorkerMirroredStrategy then starts a gRPC server per replica from the same
TF_CONFIG and all-reduces across them. The replicas run through the local runner
(:mod:`testkit.localrun`), each at 127.0.0.1 and a port of its own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from testkit import localrun
from testkit.builders import a_job

from kubetrain.operator import local

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
    counts: dict[str, int], program: str, workdir: Path, ports: dict[str, int] | None = None
) -> tuple[localrun.Ran, list[tuple[local.Launch, Any]]]:
    path = workdir / "train.py"
    path.write_text(program)
    tmpl = localrun.with_command("tensorflow", [sys.executable, "-P", str(path)], IMAGE_ENV)
    builder = a_job(NAME).framework("tensorflow")
    for t, n in counts.items():
        builder = builder.replicas(t, n, tmpl=tmpl, **({"port": ports[t]} if ports and t in ports else {}))
    ran = localrun.run(localrun.everything_succeeds(builder.build()), workdir, timeout=TIMEOUT)
    outs = []
    for launch in ran.launches.values():
        (line,) = [ln for ln in ran.lines(launch.replica) if ln.startswith("{")]
        outs.append((launch, json.loads(line)))
    return ran, outs


NAME = "tf"


def test_cluster_resolver_reads_tf_config(tensorflow_version: str, tmp_path: Path) -> None:
    counts = {"Chief": 1, "Worker": 2, "PS": 1, "Evaluator": 1}
    ran, outs = run(counts, RESOLVE, tmp_path)

    # Each replica at 127.0.0.1 and a port of its own.
    address = ran.addresses
    assert len(set(address.values())) == len(address)
    assert {a.split(":")[0] for a in address.values()} == {"127.0.0.1"}
    expected = {
        "chief": [address["tf-chief-0"]],
        "worker": [address["tf-worker-0"], address["tf-worker-1"]],
        "ps": [address["tf-ps-0"]],
    }
    for launch, out in outs:
        assert out["cluster"] == expected  # the evaluator is no member of the training cluster
        assert (out["task_type"], out["task_id"]) == (launch.replica_type, launch.index)
        if launch.replica_type != "evaluator":
            assert out["master"] == address[launch.pod]  # each task finds its own address


def test_multi_worker_mirrored_all_reduce(tensorflow_version: str, tmp_path: Path) -> None:
    # Each gRPC server listens on its port at every address: on one machine every replica has a
    # port of its own (its type's, plus its position).
    _, outs = run({"Chief": 1, "Worker": 1}, ALL_REDUCE, tmp_path, ports={"Worker": 2223})

    assert sorted((o["task_type"], o["task_id"]) for _, o in outs) == [("chief", 0), ("worker", 0)]
    for _, out in outs:
        assert out["replicas"] == 2
        assert out["sum"] == 1 + 2


def test_multi_worker_mirrored_all_reduce_with_a_master(tensorflow_version: str, tmp_path: Path) -> None:
    try:
        _, outs = run({"Master": 1, "Worker": 1}, ALL_REDUCE, tmp_path, ports={"Worker": 2223})
    except localrun.RunFailedError as e:
        # Only the known reason makes this an expected failure (a plain AssertionError is not).
        assert "Disallowed task type found in cluster spec" in str(e)  # noqa: PT017
        raise

    assert [out["sum"] for _, out in outs] == [3.0, 3.0]
