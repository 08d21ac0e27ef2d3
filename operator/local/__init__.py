"""A TrainingJob run on this machine: every replica a process, the same decisions as a cluster's.

``kubetrain run --local FILE`` and :func:`kubetrain.client.run_local` run a job's replicas as
local processes, each with the env the operator renders for its pod (every replica at 127.0.0.1
and a port of its own), and act on the operator's own decisions: the local runner observes its
processes as pods and carries out what :func:`kubetrain.operator.lifecycle.step` decides. It is
a second user of the reconciler's shell — observe, step, execute — beside the operator and the
tests' ``World``, not a second implementation of its rules.

Modules, one noun each:

- :mod:`.machine`: where each replica is reached (127.0.0.1, a port of its own) and which of
  those ports are taken;
- :mod:`.plan`: one rendered pod as a process — command, env, working directory, folders — or
  why it cannot run here;
- :mod:`.prepared`: a whole job made ready (rendered, planned, checked) before anything starts;
- :mod:`.processes`: a process group, its output, its signals;
- :mod:`.kubelet`: pods as process groups, restarted by their policy, stopped with a grace
  period, shown as :class:`~kubetrain.api.observed.Pod` values; and kubetrain's agent's part
  (progress, hangs);
- :mod:`.caches`: the operator's :class:`~kubetrain.operator.observe.Caches` over those pods;
- :mod:`.executor`: a decision carried out on processes;
- :mod:`.runner`: the loop, Ctrl-C, the outcome;
- :mod:`.said`: what a run tells its caller, as values.

It imports the API and the operator's pure parts (render, the lifecycle, observe, policies,
frameworks), never the operator's runtime, its webhooks or the reconciler
(``tests/unit/test_import_layers.py``).
"""

from kubetrain.operator.local.plan import Launch, NotRunnableError
from kubetrain.operator.local.prepared import Options, Prepared, prepare
from kubetrain.operator.local.runner import Outcome, run
from kubetrain.operator.local.said import Changed, Line, Said, Tell, Told, Warned

__all__ = [
    "Changed",
    "Launch",
    "Line",
    "NotRunnableError",
    "Options",
    "Outcome",
    "Prepared",
    "Said",
    "Tell",
    "Told",
    "Warned",
    "prepare",
    "run",
]
