"""Train a small linear regression with TensorFlow 2 from the TF_CONFIG kubetrain renders.

- TF_CONFIG with a "ps" job (the TfJob README's MASTER/WORKER/PS layout, converted to
  Chief/Worker/PS): ParameterServerStrategy. The chief is the coordinator: it trains, reports
  and exits 0 when done (its exit ends the job). Workers and PS only serve gRPC
  (tf.distribute.Server(...).join()) and never exit by themselves.
- TF_CONFIG with workers only: MultiWorkerMirroredStrategy; every worker trains and exits 0.

Reads TF_CONFIG and, if set, KUBETRAIN_PROGRESS_FILE (through kubetrain_progress, beside
this script in samples/scripts). Exits 1 if the loss did not go down tenfold.
"""

import json
import os
import sys
import time

import numpy as np
import tensorflow as tf

import kubetrain_progress

STEPS = int(os.environ.get("TRAIN_STEPS", "200"))
BATCH = 32
LR = 0.05

config = json.loads(os.environ["TF_CONFIG"])
cluster, task = config["cluster"], config["task"]
role = f"{task['type']}:{task['index']}"


def log(msg):
    print(f"[{role} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, 8)).astype("float32")
    w = np.arange(1, 9, dtype="float32").reshape(8, 1) / 8
    y = x @ w + 0.5 + 0.01 * rng.normal(size=(4096, 1)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y))


def variables(aggregation=tf.VariableAggregation.NONE):
    w = tf.Variable(tf.zeros([8, 1]), name="w", aggregation=aggregation)
    b = tf.Variable(tf.zeros([1]), name="b", aggregation=aggregation)
    return w, b


def sgd_step(w, b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    gw, gb = tape.gradient(loss, [w, b])
    w.assign_sub(LR * gw)
    b.assign_sub(LR * gb)
    return loss


def finish(losses):
    first, last = float(losses[0]), float(losses[-1])
    log(f"loss {first:.4f} -> {last:.4f} over {len(losses)} steps")
    if not last < first / 10:
        log("loss did not go down")
        sys.exit(1)


def parameter_server():
    if task["type"] in ("worker", "ps"):
        log("serving gRPC; this task never exits by itself")
        server = tf.distribute.Server(
            tf.train.ClusterSpec(cluster),
            job_name=task["type"],
            task_index=task["index"],
            protocol="grpc",
            start=True,
        )
        server.join()
        return
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    log(f"coordinator up: {len(cluster.get('worker', []))} workers, {len(cluster['ps'])} ps")
    with strategy.scope():
        w, b = variables()
    log(f"w on {w.device}, b on {b.device}")

    def dataset_fn(_context=None):
        return data().shuffle(4096, seed=1).repeat().batch(BATCH)

    it = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def step(iterator):
        x, y = next(iterator)
        return strategy.run(sgd_step, args=(w, b, x, y))

    losses = []
    every = 20
    for start in range(0, STEPS, every):
        pending = [coordinator.schedule(step, args=(it,)) for _ in range(every)]
        coordinator.join()
        losses += [p.fetch() for p in pending]
        kubetrain_progress.report(len(losses), total=STEPS, loss=float(losses[-1]))
        log(f"step {len(losses)}/{STEPS} loss {float(losses[-1]):.4f}")
    finish(losses)


def multi_worker():
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    n = strategy.num_replicas_in_sync
    log(f"MultiWorkerMirroredStrategy: {n} replicas in sync")
    with strategy.scope():
        w, b = variables(tf.VariableAggregation.MEAN)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    ds = data().shuffle(4096, seed=1).repeat().batch(BATCH * n).with_options(options)
    it = iter(strategy.experimental_distribute_dataset(ds))

    @tf.function
    def step(iterator):
        x, y = next(iterator)
        loss = strategy.run(sgd_step, args=(w, b, x, y))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, loss, axis=None)

    losses = []
    for i in range(STEPS):
        losses.append(float(step(it)))
        if (i + 1) % 20 == 0:
            kubetrain_progress.report(i + 1, total=STEPS, loss=losses[-1])
            log(f"step {i + 1}/{STEPS} loss {losses[-1]:.4f}")
    finish(losses)


if __name__ == "__main__":
    log(f"TensorFlow {tf.__version__}, cluster {json.dumps(cluster)}")
    (parameter_server if "ps" in cluster else multi_worker)()
