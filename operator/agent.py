"""The agent and the barrier: what a pod carries to be restarted in place, and to report progress.

A job with ``failurePolicy.restartMethod: InPlace`` or with ``spec.progress`` gets, in each pod,
small containers that run the main container's image (they need only a POSIX shell and
``sleep``):

- the **agent**, a sidecar (an init container with ``restartPolicy: Always``), loops five times
  a second. It does one or both of:

  - *restarts in place* (``InPlace``): it reads the pod's attempt label from a downwardAPI
    volume and exits :data:`~kubetrain.api.naming.AGENT_EXIT_CODE` when the operator has moved
    the pod to another attempt. Its restart rule turns that exit into ``RestartAllContainers``:
    the kubelet stops every container of the pod at once and starts them again in order, on the
    same node, in the same sandbox (IP, volumes and devices kept).
  - *progress* (``spec.progress``): it reads the line the training process writes to
    :data:`~kubetrain.api.naming.PROGRESS_FILE` (an emptyDir every container of the pod mounts)
    and prints it, ``progress step=...``, when it changed, at most every
    :data:`PRINT_SECONDS` (and once more when it is stopped): the operator reads the agent's
    log tail, never the program's. It removes the file when it starts: only lines written since
    count (not the attempt's before, after a restart in place). With ``deadlineSeconds``, once
    the process has reported and ``startupGraceSeconds`` after that first report, a line
    unchanged for the deadline makes the agent exit :data:`~kubetrain.api.naming.HUNG_EXIT_CODE`:
    the kubelet starts the agent again (nothing else of the pod), and the operator, which sees
    the exit in the pod's status, decides (:mod:`.policies.classify`). An agent that restarts in
    place too first leaves the attempt it ran in to its next start, which then still knows that
    the pod runs that attempt.

  It counts seconds from ``/proc/uptime`` and exits 0 when it is stopped.
- the **barrier** (``InPlace`` only), the first regular init container, waits until the pod's
  :data:`~kubetrain.api.naming.OPENED` annotation names the attempt of its label, so that no
  container of the new attempt starts before the operator has seen every pod of the old one
  stop (:mod:`.policies.inplace`). It remembers, in an emptyDir (:data:`STATE`), the attempt it
  last let start, and never lets the same one start twice in a pod. Beside it, it writes the
  restart env of that attempt (:data:`ENV_FILE`: the attempt, the job's restarts, the last
  restart's reason, read from the same downwardAPI volume), and the main container's three
  variables are read from that file (``fileKeyRef``, :func:`restart_env`). The kubelet resolves
  ``fieldRef`` env from its pod worker's copy of the pod, which can be older than the copy the
  volume was written from: a container restarted in place could start with the attempt before,
  though its barrier had seen the new one. The file holds what the barrier saw.

That memory is what lets a pod whose main container *failed* restart in place too. Under
``restartPolicy: Never`` the main container gets a rule ``RestartAllContainers`` on the exit codes
the job's policy restarts for (``restart_codes``): the kubelet restarts the pod where it is at
once, and the barrier holds it, for its attempt has run there. The kubelet erases the main
container's exit code in that restart, so the agent says it: it exits
:data:`~kubetrain.api.naming.HELD_EXIT_CODE` once, and the operator, which reads that in the pod's
status, charges the failure and moves the pod to the next attempt like any other. While the
barrier holds, the agent does not restart the pod for a move: nothing of an older attempt runs.

Both are listed before the template's own init containers: the agent first, so that it runs
while the barrier waits. They take the main container's security context, so a pod that
satisfies a Pod Security level still does, and requests equal to limits, so a Guaranteed pod
stays Guaranteed.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.api import naming, v1beta1
from kubetrain.operator.frameworks import framework as fw_contract

__all__ = ["ENV_FILE", "MOUNT", "PRINT_SECONDS", "STATE", "VOLUME", "add", "restart_env"]

Object = dict[str, Any]

VOLUME = "kubetrain-attempt"
MOUNT = "/etc/kubetrain/attempt"
# The barrier's memory (an emptyDir, kept through a restart in place). ``state``, one line the
# barrier writes whole: ``holding N`` while it waits, ``running N`` once it let attempt N start,
# N being the attempt it last let start (empty in a pod where none has). ``told``: the attempt whose
# end the agent has said; ``fresh``, there once the barrier let an attempt start since the agent
# started. A reader that finds the line empty (being written) looks again.
STATE_VOLUME = "kubetrain-state"
STATE = "/var/run/kubetrain-state"
# The files of the attempt volume (:data:`MOUNT`) the agent and the barrier read: the pod's
# attempt, the attempt its barrier may let start, and what goes with a move (the restart env).
_ATTEMPT_FILES = {
    "attempt": f"metadata.labels['{naming.ATTEMPT}']",
    "opened": f"metadata.annotations['{naming.OPENED}']",
    "restarts": f"metadata.annotations['{naming.RESTARTS}']",
    "reason": f"metadata.annotations['{naming.LAST_RESTART_REASON}']",
    "resume": f"metadata.annotations['{naming.RESUME_STEP}']",
}
# Also in the barrier's memory: the restart env of the attempt it last let start, in the format
# the kubelet reads for ``fileKeyRef`` (``NAME='value'``, one a line, no quote in a value).
ENV_FILE = "env"
_RESOURCES = {"cpu": "50m", "memory": "32Mi"}
# How often the agent and the barrier read the pod's labels, annotations and progress (shell
# builtins: each look costs one `sleep`).
POLL_SECONDS = 0.2
# How often at most the agent prints a changed progress line (a checkpoint's answer: at once).
PRINT_SECONDS = 5
_CLOCK = "read -r up _ < /proc/uptime; now=${up%.*}"


def _agent_script(in_place: bool, progress: v1beta1.ProgressSpec | None) -> str:
    """The agent's shell script: a loop of the parts the pod asks for."""
    setup, loop, stop = [], [], ["exit 0"]
    if in_place:
        # The attempt that runs in the pod is the one its barrier last let start, once the barrier
        # has let one start since this agent did (fresh): an agent started with the whole pod finds
        # the state of the run before, and nothing of that run runs any more. One restarted alone
        # after its word (a hang, a held pod) keeps it (keep): the kubelet may start it again
        # after the barrier let the next attempt start, which then runs all the same.
        setup += [f"f={MOUNT}/attempt; s={STATE}", "[ -e $s/keep ] && rm -f $s/keep || rm -f $s/fresh"]
        loop += [
            "now_attempt=; mode=; ran=; told=",
            '{ read -r now_attempt < "$f"; } 2>/dev/null',
            "{ read -r mode ran < $s/state; } 2>/dev/null",
            'if [ "$mode" = holding ]; then',
            "  { read -r told < $s/told; } 2>/dev/null",
            '  if [ -n "$ran" ] && [ "$ran" = "$now_attempt" ] && [ "$told" != "$ran" ]; then',
            '    echo "$ran" > $s/told',
            '    echo "kubetrain agent: attempt $ran ended in this pod, which waits for the next"',
            '    echo "$ran" > /dev/termination-log 2>/dev/null',
            "    : > $s/keep",
            f"    exit {naming.HELD_EXIT_CODE}",
            "  fi",
            'elif [ "$mode" = running ] && [ -e $s/fresh ] && [ -n "$now_attempt" ] && [ "$now_attempt" != "$ran" ]; then',
            '  echo "kubetrain agent: attempt $now_attempt begins: restarting the pod in place"',
            f"  exit {naming.AGENT_EXIT_CODE}",
            "fi",
        ]
    if progress is not None:
        # A line left by the attempt before (the pod restarted in place), or by the process this
        # agent found hung, is not this one's: only a line written after the agent started counts.
        setup += [
            f"p={naming.PROGRESS_FILE}",
            'rm -f "$p"',
            "last=; said=; seen=; said_at=0; answered=",
            _CLOCK,
            "moved=$now",
        ]
        say = '[ -n "$last" ] && [ "$last" != "$said" ] && echo "progress $last"'
        # Stopped, it says the file as it is now: the main container may have written its last
        # line after the loop's last look.
        reread = 'line=; { read -r line < "$p"; } 2>/dev/null; [ -n "$line" ] && last=$line'
        stop = [reread, say, *stop]
        loop += [
            'line=; { read -r line < "$p"; } 2>/dev/null',
            _CLOCK,
            'if [ "$line" != "$last" ]; then last=$line; moved=$now; [ -z "$seen" ] && [ -n "$line" ] && seen=$now; fi',
            # A checkpoint's answer goes out at once: a stop waits for it.
            'a=; case "$last" in *" answered="*) a=${last##* answered=}; a=${a%% *};; esac',
            f'if [ -n "$last" ] && [ "$last" != "$said" ] && {{ [ $((now - said_at)) -ge {PRINT_SECONDS} ] || [ "$a" != "$answered" ]; }}; then',
            '  echo "progress $last"; said=$last; said_at=$now; answered=$a',
            "fi",
        ]
        if progress.deadline_seconds is not None:
            deadline, grace = progress.deadline_seconds, progress.startup_grace
            loop += [
                f'if [ -n "$seen" ] && [ $((now - seen)) -ge {grace} ] && [ $((now - moved)) -ge {deadline} ]; then',
                f"  {say}",
                '  echo "kubetrain agent: the step has not moved for $((now - moved))s: hung"',
                *(["  : > $s/keep"] if in_place else []),
                f"  exit {naming.HUNG_EXIT_CODE}",
                "fi",
            ]
    return "\n".join(
        [
            *setup,
            f"trap '{'; '.join(stop)}' TERM INT",
            "while :; do",
            *(f"  {line}" for line in loop),
            f"  sleep {POLL_SECONDS} & wait $!",
            "done",
            "",
        ]
    )


# The barrier reads the attempt again after what goes with it: the four reads are four files of
# one volume, which a move may swap between them. A quote is dropped from the reason (the file's
# values are single-quoted).
_BARRIER = f"""\
trap 'exit 0' TERM INT
d={MOUNT}; s={STATE}; q="'"
mode=; ran=; {{ read -r mode ran < $s/state; }} 2>/dev/null
echo "holding $ran" > $s/state
said=
while :; do
  opened=; attempt=; restarts=; reason=; resume=; again=
  {{ read -r opened < $d/opened; read -r attempt < $d/attempt; read -r restarts < $d/restarts
    read -r reason < $d/reason; read -r resume < $d/resume; read -r again < $d/attempt; }} 2>/dev/null
  if [ -n "$attempt" ] && [ "$opened" = "$attempt" ] && [ "$again" = "$attempt" ]; then
    [ "$attempt" != "$ran" ] && break
    [ -n "$said" ] || {{ echo "kubetrain barrier: attempt $attempt has run in this pod: waiting for the next"; said=1; }}
  fi
  sleep {POLL_SECONDS}
done
r=$reason; reason=
while :; do case $r in *"$q"*) reason=$reason${{r%%"$q"*}}; r=${{r#*"$q"}};; *) reason=$reason$r; break;; esac; done
{{ echo "{fw_contract.RESTART_ATTEMPT_ENV}='$attempt'"; echo "{fw_contract.RESTARTS_ENV}='${{restarts:-0}}'"
  echo "{fw_contract.LAST_RESTART_REASON_ENV}='$reason'"; echo "{fw_contract.RESUME_STEP_ENV}='${{resume%%[!0-9]*}}'"
}} > $s/{ENV_FILE}
echo "running $attempt" > $s/state
: > $s/fresh
echo "kubetrain barrier: attempt $attempt starts"
"""


def add(
    spec: Object,
    main: Object,
    *,
    in_place: bool,
    progress: v1beta1.ProgressSpec | None,
    watched: bool = True,
    restart_codes: tuple[int, ...] = (),
) -> None:
    """Give the pod ``spec``, whose main container is ``main``, its agent (and, ``in_place``, its
    barrier, and the main container's rule restarting the pod in place on ``restart_codes``, if the
    template gives it no restart rule of its own); with ``progress``, the progress file in every
    one of its regular containers. A pod restarted in place always has its agent; otherwise only a
    ``watched`` one does: where a hang is to be found (a deadline), or whose progress is read (the
    first rank). The other ranks write their file all the same, into a volume nobody reads: a
    sidecar per pod costs a busy cluster."""
    if not in_place and progress is None:
        return
    if not in_place and not watched:
        _progress_file(spec, [])
        return
    attempt: list[Object] = (
        [{"name": VOLUME, "mountPath": MOUNT, "readOnly": True}, {"name": STATE_VOLUME, "mountPath": STATE}]
        if in_place
        else []
    )
    agent = _container(naming.AGENT, _agent_script(in_place, progress), main, attempt)
    agent["restartPolicy"] = "Always"
    own = [agent]
    if in_place:
        _items(spec, "volumes").append(
            {
                "name": VOLUME,
                "downwardAPI": {
                    "items": [
                        {"path": path, "fieldRef": {"fieldPath": field}}
                        for path, field in _ATTEMPT_FILES.items()
                    ]
                },
            }
        )
        _items(spec, "volumes").append({"name": STATE_VOLUME, "emptyDir": {}})
        agent["restartPolicyRules"] = [_restart_all(naming.AGENT_EXIT_CODE)]
        own.append(_container(naming.BARRIER, _BARRIER, main, attempt))
        if restart_codes and "restartPolicy" not in main and "restartPolicyRules" not in main:
            main["restartPolicy"] = "Never"
            main["restartPolicyRules"] = [_restart_all(*restart_codes)]
    if progress is not None:
        _progress_file(spec, [agent])
    spec["initContainers"] = [*own, *_items(spec, "initContainers")]


def restart_env(name: str) -> Object:
    """The main container's variable ``name`` of the restart env, read from the file its barrier
    wrote when it let the attempt start. The kubelet takes an empty value for none: the last
    restart's reason, empty before the first restart, is then left out (``optional``)."""
    ref: Object = {"volumeName": STATE_VOLUME, "path": ENV_FILE, "key": name}
    if name in (fw_contract.LAST_RESTART_REASON_ENV, fw_contract.RESUME_STEP_ENV):
        ref["optional"] = True
    return {"name": name, "valueFrom": {"fileKeyRef": ref}}


def _restart_all(*codes: int) -> Object:
    return {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": list(codes)}}


def _progress_file(spec: Object, agents: list[Object]) -> None:
    """The progress volume in every regular container (named by its env) and in ``agents``."""
    _items(spec, "volumes").append({"name": naming.PROGRESS_VOLUME, "emptyDir": {}})
    mount = {"name": naming.PROGRESS_VOLUME, "mountPath": naming.PROGRESS_DIR}
    for c in (*agents, *_items(spec, "containers")):
        _items(c, "volumeMounts").append(dict(mount))
        env = _items(c, "env")
        if all(c is not a for a in agents) and not any(
            e.get("name") == naming.PROGRESS_FILE_ENV for e in env
        ):
            env.append({"name": naming.PROGRESS_FILE_ENV, "value": naming.PROGRESS_FILE})


def _items(obj: Object, key: str) -> list[Any]:
    """``obj[key]``, a list to add to: made if the template left it out or said ``null``."""
    if obj.get(key) is None:
        obj[key] = []
    items: list[Any] = obj[key]
    return items


def _container(name: str, script: str, main: Object, mounts: list[Object]) -> Object:
    out: Object = {
        "name": name,
        "image": main.get("image"),
        "command": ["sh", "-c", script],
        **({"volumeMounts": copy.deepcopy(mounts)} if mounts else {}),
        "resources": {"requests": dict(_RESOURCES), "limits": dict(_RESOURCES)},
    }
    for key in ("imagePullPolicy", "securityContext"):
        if key in main:
            out[key] = copy.deepcopy(main[key])
    return out
