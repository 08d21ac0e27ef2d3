"""Train a small MLP with ChainerMN over MPI: run it under mpiexec, as the ChainerJob's master does.

It takes the arguments of ChainerMN's ``train_mnist.py`` (``-e`` epochs, ``-b`` batch size, ``-u``
hidden units), which the ChainerJob README's master runs, and is that path in kubetrain's
stand-in for the README's image; the data is a synthetic set of MNIST's size, as nothing here
downloads MNIST.

Every rank (mpiexec starts them through the hostfile kubetrain renders, OMPI_MCA_orte_default_hostfile)
takes its shard of a synthetic 2-class dataset (chainermn.scatter_dataset) and updates through
chainermn's multi-node optimizer (gradients allreduced over MPI). Reads only the MPI env and, if
set, KUBETRAIN_PROGRESS_FILE. Exits 1 if the mean loss across ranks did not go down by half.
"""

import argparse
import os
import sys
import time

import chainer
import chainer.functions as F
import chainer.links as L
import chainermn
import numpy as np
from mpi4py import MPI

import kubetrain_progress

parser = argparse.ArgumentParser()
parser.add_argument("-e", "--epoch", type=int, default=int(os.environ.get("TRAIN_EPOCHS", "10")))
parser.add_argument("-b", "--batchsize", type=int, default=64)
parser.add_argument("-u", "--unit", type=int, default=32)
args, _ = parser.parse_known_args()
EPOCHS, BATCH = args.epoch, args.batchsize

comm = chainermn.create_communicator("naive")  # CPU: pure MPI allreduce
rank, size = comm.rank, comm.size


def log(msg):
    print(f"[rank {rank}/{size} {os.uname().nodename} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class MLP(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(16, args.unit)
            self.l2 = L.Linear(args.unit, 2)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


if rank == 0:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60000, 16)).astype(np.float32)
    t = (x[:, :8].sum(axis=1) > x[:, 8:].sum(axis=1)).astype(np.int32)
    dataset = chainer.datasets.TupleDataset(x, t)
    log(f"Chainer {chainer.__version__}, numpy {np.__version__}, {MPI.Get_library_version().splitlines()[0]}")
else:
    dataset = None
dataset = chainermn.scatter_dataset(dataset, comm, shuffle=True, seed=0)

np.random.seed(rank)
model = L.Classifier(MLP())
optimizer = chainermn.create_multi_node_optimizer(chainer.optimizers.Adam(alpha=0.01), comm)
optimizer.setup(model)  # broadcasts rank 0's initial weights

steps_per_epoch = len(dataset) // BATCH
total, step, history = EPOCHS * steps_per_epoch, 0, []
for epoch in range(EPOCHS):
    order = np.random.permutation(len(dataset))
    losses, accs = [], []
    for i in range(steps_per_epoch):
        x, t = chainer.dataset.concat_examples([dataset[j] for j in order[i * BATCH : (i + 1) * BATCH]])
        loss = model(x, t)
        model.cleargrads()
        loss.backward()
        optimizer.update()  # allreduce of the gradients, then Adam
        losses.append(float(loss.array))
        accs.append(float(model.accuracy.array))
        step += 1
    mean_loss = comm.allreduce_obj(np.mean(losses)) / size
    mean_acc = comm.allreduce_obj(np.mean(accs)) / size
    history.append(mean_loss)
    kubetrain_progress.report(step, total=total, loss=mean_loss, accuracy=mean_acc)
    log(
        f"epoch {epoch + 1}/{EPOCHS} step {step}/{total} loss {mean_loss:.4f} accuracy {mean_acc:.3f} (shard of {len(dataset)})"
    )

same = len(set(comm.mpi_comm.allgather(float(model.predictor.l1.W.array.sum())))) == 1
log(f"loss {history[0]:.4f} -> {history[-1]:.4f}; weights identical across ranks: {same}")
sys.exit(0 if history[-1] < history[0] / 2 else 1)
