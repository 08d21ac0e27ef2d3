"""The fault benchmark's quick form: one seed, two jobs, a handful of real faults on real nodes.

``make bench-faults`` (bench/kubetrain_bench/faults) at its smallest: a cluster of its own with
two real nodes (the machine check needs the cluster gone before it looks), a DDP job restarted in
place and an MPI job, and five faults, one of each of five kinds in the order seed 3 draws them:
a node lost and brought back, a node cut off, containerd restarted under running pods, a pod of
the DDP job evicted and the operator SIGKILLed in the middle of its restart in place, the
apiserver SIGKILLed. Every check must pass: no rank twice,
no old rank in a new world, no orphans, each failure charged once to its class, each job's outcome
as its policy says, resumed training going on from its checkpoint, nothing left on the machine.
The run starts and stops its own cluster and operator, even on failure.
"""

from __future__ import annotations

from kubetrain_bench.faults import cli


def test_faults_quick() -> None:
    params = cli.Params(
        seed=3,
        nodes=2,
        job_kinds=("ddp-inplace", "mpi"),
        fault_kinds=("node-lost", "network-cut", "containerd", "operator-mid-restart", "apiserver"),
        faults=5,
        hold=25.0,
        steps=1100,
        step_seconds=0.15,
        recover_timeout=240.0,
    )
    result = cli.run(params)
    failed = [f"{v.name}: {v.detail}" for v in result.verdicts if not v.ok]
    assert not failed, f"{failed}\n{result.figures}"
    assert len(result.figures["faults"]) == params.faults, result.figures["faults"]
    assert all(f["recovered"] is not None for f in result.figures["faults"]), result.figures["faults"]
