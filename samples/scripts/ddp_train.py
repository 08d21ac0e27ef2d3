"""A tiny PyTorch DDP job: every rank fits y = 3x + 2 on its own shard of the data, over gloo.

It reads nothing but the env torchrun (or kubetrain, for plain ``python3``) provides —
MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE — so it proves the rendezvous kubetrain renders.
Each rank prints where it met the others (MASTER_ADDR and the address DNS gave for it) and,
at the end, one ``KUBETRAIN-RESULT {json}`` line: its first and last loss and the weights.
DDP averages gradients every step, so every rank must end with the same weights.
With ``--logdir``, each rank also writes its loss at every step for TensorBoard, as the run
``rank<N>`` under that directory (see tfevents.py beside this script).

With ``--checkpoint DIR`` (a volume every rank sees), rank 0 saves the model, the optimizer and
the step there every ``--checkpoint-every`` steps, and every rank of a later attempt resumes from
it: the loss goes on from where it was, not from the start. With ``spec.checkpoint`` rank 0 also
saves when kubetrain asks before a stop it sees coming, and answers; ``--pause-after-answer
SECONDS`` then holds the training that long at most for the stop to come (the steps run after the
answer would be thrown away with it). Each rank reads what kubetrain tells
it of its attempt — KUBETRAIN_RESTART_ATTEMPT, KUBETRAIN_RESTARTS, KUBETRAIN_LAST_RESTART_REASON —
and prints it. ``--fail-at-step N`` (or ``--fail-after SECONDS`` past the rendezvous) makes the last
rank exit with code 1 in attempt 0 (in every attempt below ``--fail-attempts``), to show restarts.
``--hang-at-step N`` makes the last rank stop for good at step N instead, in every attempt below
``--hang-attempts``: it neither exits nor crashes, and the other ranks wait for it in that step's
all-reduce — a hang, as a dead peer or a stuck collective makes one. SIGTERM still ends it.
``--step-seconds`` makes every step take at least that long (a steady pace, as a real model's),
``--log-every`` prints a step line every that many steps (50), and rank 0 says each checkpoint it
saves.

Every rank reports its progress after each step — the steps done, the total and the loss — to
the file kubetrain names in KUBETRAIN_PROGRESS_FILE when the job has ``spec.progress`` (through
kubetrain_progress.py beside this script; nothing without the variable). With
``progress.deadlineSeconds``, a rank hanging as above is found hung and the job restarts.
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time

import kubetrain_progress
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def hang() -> None:
    """Wait for good: nothing sets the event. SIGTERM still ends the process (exit code 143): it is
    handled, since its default action cannot end a container's PID 1 (plain ``python3``)."""
    signal.signal(signal.SIGTERM, lambda signum, _frame: os._exit(128 + signum))
    threading.Event().wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--logdir", default=None, help="write TensorBoard scalars here, one run per rank")
    parser.add_argument("--checkpoint", default=None, help="save to and resume from this directory")
    parser.add_argument("--checkpoint-every", type=int, default=20)
    parser.add_argument(
        "--fail-at-step", type=int, default=None, help="the last rank exits 1 here, in attempt 0"
    )
    parser.add_argument(
        "--fail-after", type=float, default=None, help="... or this many seconds after joining"
    )
    parser.add_argument("--fail-attempts", type=int, default=1, help="fail in every attempt below this")
    parser.add_argument(
        "--hang-at-step", type=int, default=None, help="the last rank stops for good here, in attempt 0"
    )
    parser.add_argument("--hang-attempts", type=int, default=1, help="hang in every attempt below this")
    parser.add_argument("--step-seconds", type=float, default=0.0, help="each step takes at least this long")
    parser.add_argument("--log-every", type=int, default=50, help="print a step line every this many steps")
    parser.add_argument(
        "--pause-after-answer",
        type=float,
        default=0.0,
        help="after answering a checkpoint request, wait this long at most for the stop before going on",
    )
    args = parser.parse_args()
    attempt = int(os.environ.get("KUBETRAIN_RESTART_ATTEMPT", "0"))
    restarts = int(os.environ.get("KUBETRAIN_RESTARTS", "0"))
    reason = os.environ.get("KUBETRAIN_LAST_RESTART_REASON", "")

    master = os.environ["MASTER_ADDR"]
    print(f"resolving {master}: {socket.gethostbyname(master)}", flush=True)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} on {socket.gethostname()} joined the rendezvous at {master}", flush=True)
    joined = time.monotonic()
    fails = attempt < args.fail_attempts and rank == world - 1
    hangs = attempt < args.hang_attempts and rank == world - 1

    print(f"rank {rank} attempt {attempt} after {restarts} restart(s), last: {reason or '-'}", flush=True)

    torch.manual_seed(0)  # the same initial weights everywhere; DDP also broadcasts rank 0's
    net = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)
    start, initial_loss = 0, None
    saved = os.path.join(args.checkpoint, "checkpoint.pt") if args.checkpoint else None
    if saved and os.path.exists(saved):
        state = torch.load(saved)
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, initial_loss = state["step"], state["initialLoss"]
        print(f"rank {rank} resumed at step {start} from {saved}", flush=True)
    model = DistributedDataParallel(net)
    shard = torch.Generator().manual_seed(1000 + rank)
    x = torch.rand(64, 1, generator=shard) * 2 - 1
    y = 3 * x + 2

    writer = None
    if args.logdir:
        import tfevents

        writer = tfevents.Writer(os.path.join(args.logdir, f"rank{rank}"))
    losses = []
    total = args.steps if args.steps > 0 else None
    kubetrain_progress.report(start, total=total)  # the steps done so far: the checkpoint's, if resumed
    for step in range(start, args.steps):
        began = time.monotonic()
        late = args.fail_after is not None and time.monotonic() - joined >= args.fail_after
        if fails and (step == args.fail_at_step or late):
            print(f"rank {rank} fails at step {step}", flush=True)
            os._exit(1)
        if hangs and step == args.hang_at_step:
            # Before this step's all-reduce (in backward()), in which the other ranks will wait.
            print(f"rank {rank}: hanging at step {step} (attempt {attempt})", flush=True)
            hang()
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        initial_loss = losses[0] if initial_loss is None else initial_loss
        kubetrain_progress.report(step + 1, total=total, loss=losses[-1])
        if step % args.log_every == 0:
            print(f"rank {rank} step {step} loss {losses[-1]:.6f}", flush=True)
        # A checkpoint every --checkpoint-every steps, and whenever kubetrain asks for one before
        # a stop it sees coming (spec.checkpoint): rank 0 saves, and says so on its progress line.
        request = kubetrain_progress.checkpoint_requested() if rank == 0 else None
        if saved and rank == 0 and ((step + 1) % args.checkpoint_every == 0 or request is not None):
            state = {
                "model": net.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": step + 1,
                "initialLoss": initial_loss,
            }
            torch.save(state, saved + ".tmp")
            os.replace(saved + ".tmp", saved)  # whole or not at all
            kubetrain_progress.checkpointed(step + 1, request)
            asked = "" if request is None else f", answering request {request}"
            print(f"rank {rank} saved a checkpoint at step {step + 1}{asked}", flush=True)
            if request is not None and args.pause_after_answer > 0:
                # The stop comes next: a step run now would be thrown away with it. The other
                # ranks wait in the next step's all-reduce.
                print(f"rank {rank} pauses up to {args.pause_after_answer:g}s for the stop", flush=True)
                time.sleep(args.pause_after_answer)
                print(f"rank {rank} goes on: no stop came", flush=True)
        if writer is not None:
            writer.scalar("loss", loss.item(), step)
        if args.step_seconds > 0:
            time.sleep(max(0.0, args.step_seconds - (time.monotonic() - began)))
    if writer is not None:
        writer.close()

    if not losses:  # resumed after the last step: nothing left to train
        with torch.no_grad():
            losses.append(torch.nn.functional.mse_loss(model(x), y).item())
    weight, bias = model.module.weight.item(), model.module.bias.item()
    result = {
        "rank": rank,
        "world": world,
        "attempt": attempt,
        "restarts": restarts,
        "lastRestartReason": reason,
        "startStep": start,
        "initialLoss": initial_loss,
        "firstLoss": losses[0],
        "finalLoss": losses[-1],
        "weight": weight,
        "bias": bias,
    }
    print("KUBETRAIN-RESULT " + json.dumps(result), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
