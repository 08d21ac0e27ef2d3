"""``make bench-faults``: real faults on real nodes, seeded, while DDP and MPI jobs train; nothing lost.

A cluster with 2 or 3 real nodes runs the jobs of :mod:`.jobs` (DDP restarted by making pods
again, DDP restarted in place, MPI) with progress and checkpoints; once every job runs, faults
drawn by a seeded RNG (:mod:`.faults`: a node lost and brought back, containerd restarted, a
node's network cut, the operator SIGKILLed — at a random moment and in the middle of a restart in
place —, the apiserver SIGKILLed, pods evicted) are injected one after another, each followed by
a wait for the jobs to be back. :mod:`.observe` keeps the jobs' and pods' changes and the ranks'
lines; once the jobs have ended and the cluster has stopped, :mod:`.checks` judges them and what
is left on the machine (:mod:`.machine`), and :mod:`.report` prints the faults, the recoveries
and a verdict per check. :mod:`.cli` holds the arguments and the run, which the node tier's
quick form (tests/node/test_faults.py) calls too. The benchmark exits 1 on any violation.
"""
