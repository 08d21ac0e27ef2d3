"""Train a small linear regression with MXNet's dist_sync kvstore from the DMLC_* env kubetrain renders.

DMLC_ROLE=scheduler|server: `import mxnet` itself runs ps-lite's scheduler or a kvstore server
(mxnet/kvstore_server.py) and exits when every worker has finished. DMLC_ROLE=worker: Gluon
training with kvstore dist_sync; each worker reads its own shard (kv.rank of kv.num_workers).
Reads DMLC_* (through ps-lite) and, if set, KUBETRAIN_PROGRESS_FILE. Exits 1 if the loss did not
go down tenfold.
"""

import os
import sys
import time

role = os.environ.get("DMLC_ROLE", "worker")
print(
    f"[{role}] DMLC: " + " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("DMLC_")),
    flush=True,
)

import mxnet as mx  # noqa: E402  (scheduler and server never return from this import)
import numpy as np  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402

import kubetrain_progress  # noqa: E402

EPOCHS = int(os.environ.get("TRAIN_EPOCHS", "5"))
BATCH = 32

kv = mx.kv.create("dist_sync")
rank, workers = kv.rank, kv.num_workers


def log(msg):
    print(f"[worker {rank}/{workers} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


log(f"MXNet {mx.__version__}, numpy {np.__version__}, kvstore {kv.type}")
rng = np.random.default_rng(0)
x = rng.normal(size=(4096, 8)).astype("float32")
y = x @ (np.arange(1, 9, dtype="float32").reshape(8, 1) / 8) + 0.5
x, y = x[rank::workers], y[rank::workers]
data = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=BATCH, shuffle=True)

mx.random.seed(0)
net = gluon.nn.Dense(1, in_units=8)
net.initialize(mx.init.Zero())
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05}, kvstore=kv)
loss_fn = gluon.loss.L2Loss()
steps_per_epoch = len(data)
total = EPOCHS * steps_per_epoch
losses, step = [], 0
for epoch in range(EPOCHS):
    for xb, yb in data:
        with autograd.record():
            loss = loss_fn(net(xb), yb)
        loss.backward()
        trainer.step(xb.shape[0])
        step += 1
        losses.append(float(loss.mean().asscalar()))
    kubetrain_progress.report(step, total=total, loss=losses[-1])
    log(f"epoch {epoch + 1}/{EPOCHS} step {step}/{total} loss {losses[-1]:.5f}")
first, last = np.mean(losses[:5]), np.mean(losses[-5:])
log(f"loss {first:.4f} -> {last:.5f}; weights {net.weight.data().asnumpy().round(3).tolist()}")
sys.exit(0 if last < first / 10 else 1)
