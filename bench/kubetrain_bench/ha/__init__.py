"""High availability: the leader of two operator replicas SIGKILLed under load (``make bench-ha``).

    make bench-ha       # or: PYTHONPATH=bench python -P bench/ha_bench.py [--jobs 2000]
    make bench-ha BENCH_ARGS="--lease 15/10/2 --lease 8/5/1"

For each Lease setting (``--lease DURATION/DEADLINE/PERIOD``, the operator's
``--leader-elect-lease-duration``, ``--leader-elect-renew-deadline`` and
``--leader-elect-retry-period``; default client-go's 15/10/2), on a cluster of its own: the
local control plane with kwok nodes, ``config/default`` applied, and two manager replicas as
local processes with leader election, both serving the webhooks behind one address
(:mod:`.replicas`, :mod:`.balancer`). Then (:mod:`.run`): ``--jobs`` TrainingJobs of
``--replicas`` pods until every one is Running; admission requests and job changes at a steady
rate (:mod:`.load`); a wave of new jobs, and the leader SIGKILLed once it has made a quarter of their pods;
the load kept up for ``--after`` seconds; then every change waited for.

Printed for each setting (:mod:`.report`), with the load average:

- how long after the kill the other replica held the Lease, and made its first status write;
  when the dead replica left the webhook's endpoints;
- the status lag (a change answered by the apiserver → its job's status showing its
  generation, on the benchmark's watch), p50/p99/max before the kill, during the switch and
  after it, and when it recovered;
- the admission answers lost (failed or timed out), before, during and after;
- duplicates (a replica index of a job with two pods, a job with two Services) and lost
  updates (changes never reflected, jobs behind their last change at the end): both must be 0;
- the longest time between two renewals of the Lease while the jobs were created and under
  the load: how close a loaded leader came to its renew deadline, which bounds how short the
  timings can be.

Modules: ``cli`` (arguments, one run per setting), ``replicas``, ``balancer``, ``load``,
``observe`` (the benchmark's watches), ``run``, ``report``.
"""
