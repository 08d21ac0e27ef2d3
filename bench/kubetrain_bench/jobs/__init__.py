"""End-to-end benchmark: N TrainingJobs from create to Running, against a plain-client lower bound.

    make bench-jobs       # or: PYTHONPATH=bench python -P bench/jobs_bench.py [--jobs 500 --replicas 4]
    make bench-jobs BENCH_ARGS="--jobs 10000 --steady 60"           # see --help for the rest
    make bench-jobs BENCH_ARGS="--jobs 2000 --fairness"
    make bench-jobs BENCH_ARGS=--smoke                               # every phase, small (make test)

Starts the local control plane with kwok fake nodes (as many as the pods need; kube-scheduler
binds pods, kwok makes them Running). kube-scheduler runs with ``--kube-api-qps``
``--scheduler-qps`` (1000; burst twice that): at its default, 50, it binds about 50 pods a
second and the floor would measure the scheduler. The benchmark installs the TrainingJob
CRD and runs its phases, each in namespaces of its own (``--namespaces`` spreads the jobs),
deleted (and drained of pods) before the next starts:

1. **Plain client (the lower bound).** No operator. The benchmark itself creates
   jobs x replicas bare pods with the same concurrency it uses for jobs, and times them
   from the first create until every pod's phase is Running. No operator can beat this:
   it has to make at least these pods, through the same apiserver, scheduler and kwok.
2. **Operator.** ``kubetrain-operator`` runs as a separate process (``--kube-api-qps``
   and ``--kube-api-burst`` from ``--qps``/``--burst``; ``--gang-scheduler none`` unless
   told otherwise), and the benchmark creates the TrainingJobs (one Master, replicas - 1
   Workers each) and times them from the first create until every job's
   ``.status.state`` is Running.
3. **Fairness** (``--fairness``). As many new jobs again, while the running ones finish
   (their Masters exit 0 at a steady rate through kwok): the status lag of the finishing
   jobs, and of the new ones, while thousands of first passes wait.
4. **Steady state** (``--steady SECONDS``). Once every job runs, the benchmark waits until
   its watches have shown no change to a pod or a job for ``--quiet`` seconds (kwok may
   still be catching up on pods' conditions long after they all run), then takes the
   operator's CPU over SECONDS (as a share of one core), with the changes its watches saw
   meanwhile and the operator's reconciles; then ``--changes`` single changes one after
   another (a Master exits 0), each timed until its job says Succeeded.

Per-object latencies (create sent → Running seen on the benchmark's watch) give p50/p95.
The **status lag** of a job is the time from the moment the benchmark's own pod watch
shows its last pod Running (or its Master Succeeded) to the moment its job watch shows the
job Running (Succeeded): what the operator adds, given p50/p99/max for every phase. The
ratio of the wall times says how far the operator is from the floor.

**API requests per job.** ``apiserver_request_total`` is scraped before the first create
and again once every job is Running plus ``--settle`` seconds (trailing status patches and
Events), and the delta is split by (verb, group, resource, subresource). The metric has no
user or client label, so requests are attributed by what they touch:

- kube-scheduler: ``pods/binding`` creates and ``events.k8s.io`` Events;
- kwok (the fake kubelet): ``pods/status`` and ``nodes/status``;
- the benchmark: its TrainingJob creates and its own list/watch, which it counts itself
  and subtracts exactly;
- the operator: every other *write* to pods, services, configmaps, core/v1 Events and
  TrainingJobs (creates, status patches, ...): nothing else here writes those while jobs
  start.
- reads (GET/LIST/WATCH) of those resources, and of nodes, are shown as "operator?": they
  may be the operator's, or a controller's — the garbage collector GETs owners and
  dependents, for one — so the operator's figure is its writes, plus at most these reads.
  WATCH requests are counted by the apiserver when they *end*: a watch still open is not
  in the delta.
- anything else (leases, non-resource URLs such as /metrics, ...) is "other".

``--audit`` makes the attribution exact: the apiserver writes an audit log (metadata
level), the operator and the benchmark connect as users of their own, and the
control-plane components are told apart by user agent. Both tables are then printed.
Between phases the benchmark waits until the previous namespace is gone and the
apiserver is quiet, so that its garbage collection does not spill into the next window.

At the end of each operator phase the benchmark reads the operator's peak RSS (VmHWM) and
CPU time (utime + stime) from /proc, and its reconcile count from its /metrics; it also
reports the CPU time each control-plane process spent in the phase, since they all share
this machine's cores.

``--kueue workload|pods`` puts every job in a Kueue queue (Kueue v0.19.2, started beside the
cluster; a ClusterQueue per namespace with quota for all the jobs at once), on that route of the
operator's ``--kueue``: with ``--audit``, Kueue's own requests are told apart from the
operator's, so the writes per job of each route can be read off.

``--smoke`` runs every phase with 12 jobs of 2 replicas (``make test`` runs it; see
tests/e2e/test_bench_jobs.py). If the jobs are not all Running within ``--timeout`` seconds, the benchmark prints what it
measured so far, says how many jobs got there, and exits with status 1.

The modules, by role: ``cli`` (the arguments and the run of the phases), ``cluster`` (the
control plane, its users and namespaces), ``plain`` (the plain client's phases),
``operator_phase`` with ``fairness`` and ``steady`` (the operator's), ``watches`` (the
benchmark's watches and creates), ``bodies`` (the objects it creates), ``timings``, ``requests``
and ``metrics`` (what is measured: latencies and status lags, the apiserver's requests, the
operator's /metrics) and ``report`` (the printed figures).
"""
