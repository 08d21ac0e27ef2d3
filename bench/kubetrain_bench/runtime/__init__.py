"""Benchmark of the operator's caches and controller runtime against a real apiserver.

    make bench                                  # or: PYTHONPATH=bench python -P bench/runtime_bench.py
    make bench BENCH_ARGS="--objects 40000"     # see --help for the rest

Starts the local apiserver tier, installs the TrainingJob CRD and fills one namespace with
what the operator would find there at ``--objects`` pods: ``objects / 4`` TrainingJobs of
the pytorch-ddp sample (one Master, three Workers) as ``kubectl apply`` leaves them (the
``last-applied-configuration`` annotation) with a Running status, and for each the four
Services and four pods :func:`kubetrain.operator.render.render` makes, owned by the job,
bound to one of ``--nodes`` Nodes and given the status a kubelet writes for a running
container (conditions, container IDs, image digests, IPs, volume mounts). The apiserver adds
its defaults, the ServiceAccount token volume and ``managedFields``, as for real objects.
No scheduler or kubelet runs: the pods are bound at creation and their status is patched.

Then, for each ``--variants`` of the caches' transforms — ``none``, ``strip`` (only
``managedFields`` stripped: the informer's default) and ``project`` (the per-kind
projections of :mod:`kubetrain.operator.projection`, what the operator runs) — a fresh
process starts the operator's informers one at a time, as ``kubetrain.operator.main``
configures them (label selector, owner index), and measures its RSS (after
``gc.collect()``) before and after each cache syncs. Then a controller with a no-op
reconciler and 4 workers reconciles every pod's key, and, last, each store's live size is
taken (a walk of its objects, every object counted once). Printed: per variant, RSS and
live size by cache (MiB and bytes per object), each process's peak RSS, the sync times and
the no-op reconcile rate.

RSS grows by more than the live size: a page of the list (500 whole objects) is decoded
before it is transformed, and what is freed of it stays with the process, partly reused by
the next cache. So the sum of a process's RSS steps is its true cost; one cache's step is
approximate, and its live size is exact.
"""
