#!/usr/bin/env bash
# background.sh COMMAND [ARG]...: run COMMAND so that it takes only the CPU the rest of the machine
# leaves idle. `make test` runs the property tier (pure, no clock) this way beside the cluster
# tiers, which wait on the processes they start far more than they compute.
# `nice` alone does not do it where the kernel groups processes by session (autogroup, the default
# here): the scheduler shares the CPU between sessions first, and every component the cluster tiers
# start runs in a session of its own. So COMMAND gets a session of its own, whose autogroup is
# given nice 19, and nice 19 itself (for kernels without autogroup). Being in its own session, it
# would escape a stop aimed at this script's process group (hack/concurrently.sh's): this script
# passes TERM, INT and HUP on to COMMAND's whole session, and exits with COMMAND's status.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARG]..." >&2; exit 2; }
# Not a process-group leader (no job control here), setsid makes the session in place: $! leads it.
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' background "$@" &
child=$!
trap 'kill -TERM -- "-$child" 2>/dev/null; wait "$child"; exit 143' TERM INT HUP
wait "$child"
