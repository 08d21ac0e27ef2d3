"""What a local run tells whoever runs it, as values; how to show them is the caller's.

The runner hands each to the ``tell`` callable it is given, in the order they happen:

- :class:`Line`: a line a replica wrote, tagged as ``kubetrain logs`` tags it (``worker-1``),
  or a notice of kubetrain's own (``--- container restarted (restart 1) ---``);
- :class:`Changed`: the job after a status write, whatever changed (the state, the replicas'
  counts, the restarts, the progress);
- :class:`Told`: an Event the step sent (a failure, a restart, the outcome);
- :class:`Warned`: something the run does differently from a cluster, said once before it starts
  (a container left out, a queue or a TensorBoard not run here), or that it is stopping.

``kubetrain run --local`` prints them as the job verbs print a cluster's job
(:mod:`kubetrain.cli.local`); ``client.run_local`` prints them plainly unless given a ``tell``.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from kubetrain.api import v1beta1
from kubetrain.operator import lifecycle

__all__ = ["Changed", "Line", "Said", "Tell", "Told", "Warned"]


@attrs.frozen(kw_only=True)
class Line:
    """A line a process wrote (``text`` without its newline), or a notice of kubetrain's own."""

    replica: str  # worker-1
    replica_type: str  # as labelled: lower case
    index: int
    attempt: int
    pod: str
    text: str
    notice: bool = False


@attrs.frozen(kw_only=True)
class Changed:
    job: v1beta1.TrainingJob


@attrs.frozen(kw_only=True)
class Told:
    event: lifecycle.Event


@attrs.frozen(kw_only=True)
class Warned:
    text: str


Said = Line | Changed | Told | Warned
Tell = Callable[[Said], None]
