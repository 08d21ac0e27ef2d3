"""The agent and the barrier: what a pod carries to be restarted in place.

A job with ``failurePolicy.restartMethod: InPlace`` gets, in each pod, two small containers
that run the main container's image (they need only a POSIX shell and ``sleep``):

- the **agent**, a sidecar (an init container with ``restartPolicy: Always``), reads the pod's
  attempt label from a downwardAPI volume five times a second and exits
  :data:`~kubetrain.api.naming.AGENT_EXIT_CODE` when the operator has moved the pod to another
  attempt. Its restart rule turns that exit into ``RestartAllContainers``: the kubelet stops
  every container of the pod at once and starts them again in order, on the same node, in the
  same sandbox (IP, volumes and devices kept). It exits 0 when it is stopped.
- the **barrier**, the first regular init container, waits until the pod's
  :data:`~kubetrain.api.naming.OPENED` annotation names the attempt of its label, so that no
  container of the new attempt starts before the operator has seen every pod of the old one
  stop (:mod:`.policies.inplace`).

Both are listed before the template's own init containers: the agent first, so that it runs
while the barrier waits. They take the main container's security context, so a pod that
satisfies a Pod Security level still does, and requests equal to limits, so a Guaranteed pod
stays Guaranteed.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.api import naming

__all__ = ["MOUNT", "VOLUME", "add"]

Object = dict[str, Any]

VOLUME = "kubetrain-attempt"
MOUNT = "/etc/kubetrain/attempt"
_RESOURCES = {"cpu": "50m", "memory": "32Mi"}
# How often the agent and the barrier read the pod's labels and annotations (shell builtins: each
# look costs one `sleep`).
POLL_SECONDS = 0.2

# The attempt it started in is its own; any other in the label is the operator's move.
_AGENT = f"""\
f={MOUNT}/attempt
read -r mine < "$f"
trap 'exit 0' TERM INT
echo "kubetrain agent: attempt $mine"
while :; do
  now=$mine
  {{ read -r now < "$f"; }} 2>/dev/null
  if [ -n "$now" ] && [ "$now" != "$mine" ]; then
    echo "kubetrain agent: attempt $now begins: restarting the pod in place"
    exit {naming.AGENT_EXIT_CODE}
  fi
  sleep {POLL_SECONDS} & wait $!
done
"""
_BARRIER = f"""\
d={MOUNT}
while :; do
  opened=; attempt=
  {{ read -r opened < $d/opened; read -r attempt < $d/attempt; }} 2>/dev/null
  [ -n "$attempt" ] && [ "$opened" = "$attempt" ] && break
  sleep {POLL_SECONDS}
done
echo "kubetrain barrier: attempt $attempt starts"
"""


def add(spec: Object, main: Object) -> None:
    """Give the pod ``spec``, whose main container is ``main``, its agent and barrier."""
    spec.setdefault("volumes", []).append(
        {
            "name": VOLUME,
            "downwardAPI": {
                "items": [
                    {"path": "attempt", "fieldRef": {"fieldPath": f"metadata.labels['{naming.ATTEMPT}']"}},
                    {"path": "opened", "fieldRef": {"fieldPath": f"metadata.annotations['{naming.OPENED}']"}},
                ]
            },
        }
    )
    agent = _container(naming.AGENT, _AGENT, main)
    agent["restartPolicy"] = "Always"
    agent["restartPolicyRules"] = [
        {
            "action": "RestartAllContainers",
            "exitCodes": {"operator": "In", "values": [naming.AGENT_EXIT_CODE]},
        }
    ]
    spec["initContainers"] = [
        agent,
        _container(naming.BARRIER, _BARRIER, main),
        *spec.get("initContainers", []),
    ]


def _container(name: str, script: str, main: Object) -> Object:
    out: Object = {
        "name": name,
        "image": main.get("image"),
        "command": ["sh", "-c", script],
        "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT, "readOnly": True}],
        "resources": {"requests": dict(_RESOURCES), "limits": dict(_RESOURCES)},
    }
    for key in ("imagePullPolicy", "securityContext"):
        if key in main:
            out[key] = copy.deepcopy(main[key])
    return out
