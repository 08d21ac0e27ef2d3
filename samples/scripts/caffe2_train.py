"""Caffe2's distributed ``resnet50_trainer.py``, on current PyTorch: shards meet through redis or a
shared directory under ``RUN_ID``, then average their gradients over Gloo.

The Caffe2Job README's image ran Caffe2's ``caffe2/python/examples/resnet50_trainer.py``; kubetrain's
stand-in for that image holds this script at that path. Caffe2 was merged into PyTorch in 2018; its
last build reachable here has no redis store and makes a 2.6 GB image (docs/frameworks.md, "The
first operators' README jobs on real nodes"), but what the trainer did across shards is all here,
on the same Gloo library:

- The rendezvous. Caffe2 created a *store handler* — ``RedisStoreHandlerCreate`` when
  ``--redis_host`` is given, else ``FileStoreHandlerCreate`` under ``--file_store_path`` — with
  the run's ID as its prefix, and Gloo's common world met through it. :class:`RedisStore` and
  :class:`FileStore` below behave as those handlers do, as ``torch.distributed`` stores: every key
  under ``RUN_ID/``; a redis ``set`` of a key that exists is refused with Caffe2's message (``SETNX``:
  "... was already set (perhaps you reused a run ID you have used before?)"); ``get`` and ``wait``
  poll until the keys exist. The redis client speaks RESP over a plain socket (no client library).
- The training. ``data_parallel_model`` broadcast shard 0's parameters, then all-reduced every
  gradient across the shards each step; so does this, for a small residual network on synthetic
  images (nothing here downloads ImageNet, and the nodes have no GPU).

Flags are the trainer's (``--shard_id``, ``--num_shards``, ``--run_id``, ``--redis_host``,
``--redis_port``, ``--file_store_path``, ``--distributed_interfaces``, ...), each defaulting to the
env kubetrain renders for a Caffe2 worker (SHARD_ID, NUM_SHARDS, RUN_ID, REDIS_HOST, REDIS_PORT,
NFS_PATH), so both the README's bare ``python resnet50_trainer.py`` and the NFS example's flags
work; the data and GPU flags are accepted and ignored. Reports progress through kubetrain_progress.py
when KUBETRAIN_PROGRESS_FILE is set. Prints where it met its peers, a checksum of the final
weights on every shard and ``loss A -> B``; exits 1 if the loss did not halve, 2 if the rendezvous
failed (a reused run ID among the reasons).
"""

import argparse
import datetime
import fcntl
import hashlib
import os
import socket
import sys
import threading
import time
import urllib.parse

import kubetrain_progress
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

REUSED = " (perhaps you reused a run ID you have used before?)"  # Caffe2's RedisStoreHandler::set


class RedisStore(dist.Store):
    """Caffe2's RedisStoreHandler as a ``torch.distributed`` store: keys are ``{prefix}/{key}``."""

    def __init__(self, host, port, prefix, timeout=datetime.timedelta(seconds=300)):
        super().__init__()
        self.prefix, self._timeout = prefix, timeout
        self._lock = threading.Lock()  # one command on the wire at a time
        deadline = time.monotonic() + 60  # the Service's name may resolve a moment after we start
        while True:
            try:
                self._sock = socket.create_connection((host, port), timeout=30)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        self._buf = b""

    def key(self, name):
        return f"{self.prefix}/{name}".encode()

    def command(self, *args):
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        wire = b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
        with self._lock:
            self._sock.sendall(wire)
            return self._reply()

    def _line(self):
        while b"\r\n" not in self._buf:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(f"redis: {rest.decode()}")
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self._buf) < n + 2:
                chunk = self._sock.recv(65536)
                if not chunk:
                    raise ConnectionError("redis closed the connection")
                self._buf += chunk
            data, self._buf = self._buf[:n], self._buf[n + 2 :]
            return data
        if kind == b"*":
            return [self._reply() for _ in range(int(rest))]
        raise RuntimeError(f"redis: unexpected reply {line!r}")

    def set(self, name, value):
        if self.command("SETNX", self.key(name), _bytes(value)) != 1:
            raise RuntimeError(f"Value at {name} was already set{REUSED}")

    def get(self, name):
        self.wait([name])
        return self.command("GET", self.key(name))

    def add(self, name, value):
        return self.command("INCRBY", self.key(name), int(value))

    def check(self, names):
        return self.command("EXISTS", *(self.key(n) for n in names)) == len(names)

    def wait(self, names, timeout=None):
        _poll(lambda: self.check(names), names, timeout or self._timeout)

    def delete_key(self, name):
        return self.command("DEL", self.key(name)) == 1

    def num_keys(self):
        return len(self.keys())

    def keys(self):
        """Every key of this run, as redis holds it (``SCAN``, never ``KEYS``)."""
        found, cursor = [], b"0"
        while True:
            cursor, batch = self.command("SCAN", cursor, "MATCH", self.key("*"), "COUNT", 1000)
            found += [k.decode() for k in batch]
            if cursor == b"0":
                return sorted(found)


class FileStore(dist.Store):
    """Caffe2's FileStoreHandler: a file per key in ``{path}/{prefix}/``, written whole (a temporary
    file renamed over it). Like Caffe2's, ``set`` replaces a file left by an earlier run under the
    same prefix — the reason the run ID must be new. ``add``, which Caffe2's file store lacked and
    ``torch.distributed``'s barrier needs, holds an ``flock`` on the directory's lock file."""

    def __init__(self, path, prefix, timeout=datetime.timedelta(seconds=300)):
        super().__init__()
        self.prefix, self.base = prefix, os.path.join(os.path.realpath(path), prefix)
        os.makedirs(self.base, exist_ok=True)
        self._timeout = timeout

    def _path(self, name):
        return os.path.join(self.base, urllib.parse.quote(name, safe=""))

    def set(self, name, value):
        tmp = os.path.join(self.base, f".{urllib.parse.quote(name, safe='')}.{os.getpid()}")
        with open(tmp, "wb") as f:
            f.write(_bytes(value))
        os.replace(tmp, self._path(name))

    def get(self, name):
        self.wait([name])
        with open(self._path(name), "rb") as f:
            return f.read()

    def add(self, name, value):
        with open(os.path.join(self.base, ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(self._path(name), "rb") as f:
                    current = int(f.read())
            except FileNotFoundError:
                current = 0
            self.set(name, str(current + int(value)))
            return current + int(value)

    def check(self, names):
        return all(os.path.exists(self._path(n)) for n in names)

    def wait(self, names, timeout=None):
        _poll(lambda: self.check(names), names, timeout or self._timeout)

    def delete_key(self, name):
        try:
            os.unlink(self._path(name))
            return True
        except FileNotFoundError:
            return False

    def num_keys(self):
        return len(self.keys())

    def keys(self):
        names = (urllib.parse.unquote(n) for n in os.listdir(self.base) if not n.startswith("."))
        return sorted(f"{self.prefix}/{n}" for n in names)


def _bytes(value):
    return value if isinstance(value, bytes) else bytes(value) if isinstance(value, list) else value.encode()


def _poll(ready, names, timeout):
    deadline = time.monotonic() + timeout.total_seconds()
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"Wait timeout for name(s): {' '.join(names)}")
        time.sleep(0.01)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a, self.b = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return F.relu(x + self.b(F.relu(self.a(x))))


class TinyResNet(nn.Module):
    """A stem, two residual blocks and a linear head: ResNet-50's shape, a thousandth of its size."""

    def __init__(self, c=8, classes=2):
        super().__init__()
        self.stem, self.blocks, self.head = (
            nn.Conv2d(1, c, 3, padding=1),
            nn.Sequential(Block(c), Block(c)),
            nn.Linear(c, classes),
        )

    def forward(self, x):
        return self.head(self.blocks(F.relu(self.stem(x))).mean(dim=(2, 3)))


def images(n, seed):
    """Noisy 12x12 images of horizontal (class 0) or vertical (class 1) stripes."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=g)
    stripes = (torch.arange(12) % 2).float()
    x = torch.where(labels.view(n, 1, 1, 1) == 0, stripes.view(1, 1, 12, 1), stripes.view(1, 1, 1, 12))
    return x.expand(n, 1, 12, 12) + 1.5 * torch.randn(n, 1, 12, 12, generator=g), labels


def main():
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shard_id", type=int, default=int(env("SHARD_ID", "0")))
    p.add_argument("--num_shards", type=int, default=int(env("NUM_SHARDS", "1")))
    p.add_argument("--run_id", default=env("RUN_ID", ""))
    p.add_argument("--redis_host", default=env("REDIS_HOST"))
    p.add_argument("--redis_port", type=int, default=int(env("REDIS_PORT", "6379")))
    p.add_argument("--file_store_path", default=env("NFS_PATH", "/tmp"))
    p.add_argument("--distributed_interfaces", default="", help="Gloo's interface (GLOO_SOCKET_IFNAME)")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--num_epochs", type=int, default=int(env("TRAIN_EPOCHS", "6")))
    p.add_argument("--epoch_size", type=int, default=2048, help="images per epoch, over all shards")
    p.add_argument("--base_learning_rate", type=float, default=0.02)
    # resnet50_trainer's data and device flags: accepted, not used (synthetic data, on the CPU).
    for flag in ("--train_data", "--test_data", "--db_type", "--num_gpus", "--gpus", "--num_labels"):
        p.add_argument(flag)
    args, _ = p.parse_known_args()
    shard, shards, run_id = args.shard_id, args.num_shards, args.run_id

    def log(msg):
        print(
            f"[shard {shard}/{shards} {socket.gethostname()} {time.strftime('%H:%M:%S')}] {msg}", flush=True
        )

    log(f"torch {torch.__version__}, Gloo; run ID {run_id!r}")
    if shards > 1:
        if not run_id:
            log("a distributed run needs a run ID (--run_id or RUN_ID)")
            return 2
        if args.distributed_interfaces:
            os.environ["GLOO_SOCKET_IFNAME"] = args.distributed_interfaces.split(",")[0]
        if args.redis_host:
            store = RedisStore(args.redis_host, args.redis_port, run_id)
            where = f"redis {args.redis_host}:{args.redis_port}"
        else:
            store = FileStore(args.file_store_path, run_id)
            where = f"files under {store.base}"
        try:
            dist.init_process_group("gloo", store=store, rank=shard, world_size=shards)
        except RuntimeError as e:
            log(f"rendezvous under run ID {run_id} failed: {e}")
            return 2
        peers = [None] * shards
        dist.all_gather_object(peers, f"{socket.gethostname()}/{os.getpid()}")
        met = ", ".join(f"shard {i} {p}" for i, p in enumerate(peers))
        log(f"shard {shard} of {shards} met its peers under run ID {run_id} through {where}: {met}")
        log(f"rendezvous keys under {run_id}/: {' '.join(store.keys())}")

    torch.manual_seed(shard)  # each shard its own initial weights, replaced by shard 0's below
    model = TinyResNet()
    if shards > 1:
        for t in model.state_dict().values():
            dist.broadcast(t, src=0)  # data_parallel_model's _SyncAllParams
    opt = torch.optim.SGD(model.parameters(), lr=args.base_learning_rate, momentum=0.9)
    per_shard = args.epoch_size // shards
    x_all, y_all = images(args.epoch_size, seed=1234)
    x, y = (
        x_all[shard * per_shard : (shard + 1) * per_shard],
        y_all[shard * per_shard : (shard + 1) * per_shard],
    )
    steps = per_shard // args.batch_size
    total, step, history = args.num_epochs * steps, 0, []
    for epoch in range(args.num_epochs):
        g = torch.Generator().manual_seed(epoch * 1000 + shard)
        order, losses = torch.randperm(per_shard, generator=g), []
        for i in range(steps):
            idx = order[i * args.batch_size : (i + 1) * args.batch_size]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            if shards > 1:
                for param in model.parameters():  # data_parallel_model's gradient Allreduce
                    dist.all_reduce(param.grad)
                    param.grad /= shards
            opt.step()
            losses.append(loss.item())
            step += 1
        mean = torch.tensor(sum(losses) / len(losses))
        if shards > 1:
            dist.all_reduce(mean)
            mean /= shards
        history.append(mean.item())
        kubetrain_progress.report(step, total=total, loss=history[-1])
        log(f"epoch {epoch + 1}/{args.num_epochs} step {step}/{total} loss {history[-1]:.4f}")
    weights = hashlib.sha256(b"".join(t.detach().numpy().tobytes() for t in model.state_dict().values()))
    checksum = weights.hexdigest()[:16]
    same = True
    if shards > 1:
        sums = [None] * shards
        dist.all_gather_object(sums, checksum)
        same = len(set(sums)) == 1
        dist.destroy_process_group()
    log(f"weights sha256 {checksum}; identical across shards: {same}")
    log(f"loss {history[0]:.4f} -> {history[-1]:.4f}")
    return 0 if history[-1] < history[0] / 2 else 1


if __name__ == "__main__":
    sys.exit(main())
