"""An elastic PyTorch job: DDP that survives the world growing and shrinking, under torchrun.

torchrun (with kubetrain's ``PET_*``: ``PET_NNODES=min:max`` and a c10d rendezvous) restarts
this script on every node whenever a node joins or leaves, with the new ``WORLD_SIZE`` and
ranks. So the script keeps its progress in a checkpoint on a volume the pods share: rank 0
writes the step and the weights after every step (atomically, by rename), and every start
resumes from it. Each step, rank 0 prints one ``KUBETRAIN-STEP {json}`` line — the step, the
world size and torchrun's restart count — so the logs show the world re-forming while the
step count carries on. With ``--stop-file``, the job ends early once that file exists (all
ranks agree on it through an all_reduce, so they stop at the same step).

Every rank reports its progress — the step, the total and the loss — to the file kubetrain names
in KUBETRAIN_PROGRESS_FILE when the job has ``spec.progress`` (through kubetrain_progress.py
beside this script): once at each start, from the checkpoint, then after every step.

torchrun stops every worker with SIGTERM when the world changes. A SIGTERM that came between
saving a step and printing its line would lose the line of a step that counts; so the save and
the line are one commit: a SIGTERM that comes during it is held until the commit is done, and
then ends the process as it would have (by the signal, so torchrun reports the same).

Once done, the process leaves without the interpreter's teardown (``os._exit``, after destroying
the process group and flushing its output). With torch 2.13 that teardown, of C++ threads its
distributed objects left, aborted now and then ("terminate called without an active exception",
SIGABRT; once in about 35 runs of tests/realcode/test_pytorch_elastic.py here, after the last step
was saved, and a CI run hung the same way). torchrun then restarts a worker group that has
finished, and waits for peers that have left: the job hangs instead of ending.
"""

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

import kubetrain_progress
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Commit:
    """Holds a SIGTERM that comes while ``with commit:`` runs, until the block is done."""

    def __init__(self) -> None:
        self.open = False
        self.held = False
        signal.signal(signal.SIGTERM, self._on_term)

    def _on_term(self, signum: int, _frame: object) -> None:
        if self.open:
            self.held = True
        else:
            self._die()

    @staticmethod
    def _die() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def __enter__(self) -> None:
        self.open = True

    def __exit__(self, *_: object) -> None:
        self.open = False
        if self.held:
            self._die()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--checkpoint", required=True, help="a file on a volume every pod shares")
    parser.add_argument("--step-seconds", type=float, default=0.1, help="pace, so scaling can be watched")
    parser.add_argument("--stop-file", default=None, help="end once this file exists")
    args = parser.parse_args()

    commit = Commit()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = torch.nn.Linear(1, 1)
    step = 0
    checkpoint = Path(args.checkpoint)
    if checkpoint.exists():
        saved = torch.load(checkpoint)
        step = saved["step"]
        model.load_state_dict(saved["model"])
    ddp = DistributedDataParallel(model)  # broadcasts rank 0's weights to the newcomers
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    total = args.steps if args.steps > 0 else None
    kubetrain_progress.report(step, total=total)
    while step < args.steps:
        stop = torch.tensor([float(args.stop_file is not None and Path(args.stop_file).exists())])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            break
        x = torch.rand(32, 1) * 2 - 1
        loss = torch.nn.functional.mse_loss(ddp(x), 3 * x + 2)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        kubetrain_progress.report(step, total=total, loss=loss.item())
        if rank == 0:
            with commit:
                partial = checkpoint.with_suffix(".partial")
                torch.save({"step": step, "model": model.state_dict()}, partial)
                partial.rename(checkpoint)
                # Every step is saved: a checkpoint kubetrain asks for (spec.checkpoint) is this one.
                kubetrain_progress.checkpointed(step, kubetrain_progress.checkpoint_requested())
                line = {"step": step, "world": world, "restart": restart, "loss": round(loss.item(), 5)}
                print("KUBETRAIN-STEP " + json.dumps(line), flush=True)
        time.sleep(args.step_seconds)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
