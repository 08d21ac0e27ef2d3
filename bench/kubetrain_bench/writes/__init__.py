"""What each write of a TrainingJob costs kube-apiserver, against the writes of bare pods.

    make bench-writes                       # or: PYTHONPATH=bench python -P bench/write_cost.py [--jobs 2000]
    make bench-writes BENCH_ARGS="--without-cel"   # the CRD's CEL rules left out, to see their share

The jobs benchmark (``make bench-jobs``) compares the time to all Running of N TrainingJobs
with that of the same number of bare pods. On a machine whose cores the apiserver saturates, that
ratio is bounded below by what the cluster spends on a job's writes beyond its bare pods, whatever
operator makes them. This script measures those writes one kind at a time, against etcd and
kube-apiserver alone (no scheduler, no kwok, no watcher but the apiserver's own cache), as
kube-apiserver's CPU seconds (from /proc) over every write of the kind that ``--jobs`` jobs make,
sent ``--concurrency`` at a time:

- the user's TrainingJob create, and the operator's two status patches (Created, then Running,
  as the operator's types write them);
- the job's headless Service (``--host-names``: PerJob, one; PerReplica, one per pod);
- per pod: the create, the scheduler's binding and the kubelet's status patch to Running — for a
  bare pod (the jobs benchmark's floor) and for the pod the operator renders for that job (its
  env, labels, ports, owner reference).

It prints the cost of each kind in milliseconds of apiserver CPU per write, and per job: the bare
pods' writes, the operator's (everything above), and their ratio — the least time to all Running,
relative to the bare pods, of any operator that makes these writes, when the apiserver is what
the machine waits for.
"""
