#!/usr/bin/env bash
# Build (or reuse from the cache) everything the local cluster needs — the control plane, the
# schedulers the tests run beside kube-scheduler (scheduler-plugins, Kueue), and a real node's
# parts — and print the directories that hold the binaries, one per line, for PATH or
# KUBETRAIN_BIN_PATH. A real node needs root (Debian packages, namespaces): where its
# parts cannot be had, say so and go on; whatever needs a real node then fails, naming them.
#
# Downloads are network-bound and compiles use both cores, so they overlap: every component's
# fetch (each script's `fetch` mode: its wrapper module resolved, the modules of its packages and
# its Debian packages downloaded, nothing built) starts at once, in the background; the builds run
# one after another, each once its own fetch has ended. A fetch that fails only warns: its build
# downloads what is missing itself and fails, naming its step, if it cannot. Each step prints its
# seconds as it ends, and a table at the end sums them up per component.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
start=$(date +%s)
components=(tools etcd k8s schedulers node)
KUBETRAIN_BUILD_TIMES="$(mktemp)"
export KUBETRAIN_BUILD_TIMES

declare -A fetch_pid build_s
# Each fetch runs in a process group of its own (set -m), so that an interrupted or failed build
# stops it whole. (Not a session of its own: a new session is a new scheduling group, which would
# escape a `nice` given to the whole build.)
stop_fetches() {
  for pid in "${fetch_pid[@]}"; do kill -- -"$pid" 2>/dev/null || true; done
  rm -f "$KUBETRAIN_BUILD_TIMES"
}
trap stop_fetches EXIT
trap 'exit 130' INT TERM
for c in "${components[@]}"; do
  set -m
  "$here/build-$c.sh" fetch >/dev/null &
  set +m
  fetch_pid[$c]=$!
done

for c in "${components[@]}"; do
  if ! wait "${fetch_pid[$c]}"; then
    printf '==> WARNING: fetching for %s failed (above); its build downloads what it needs itself\n' "$c" >&2
  fi
  unset "fetch_pid[$c]"
  t0=$(date +%s)
  if [ "$c" = node ]; then
    if ! "$here/build-node.sh"; then
      printf '==> WARNING: real-node parts unavailable (see above); kwok nodes only\n' >&2
    fi
  else
    "$here/build-$c.sh"
  fi
  build_s[$c]=$(($(date +%s) - t0))
done

{
  printf '==> local cluster ready in %ss; seconds per component (its fetch ran beside earlier builds):\n' \
    "$(($(date +%s) - start))"
  printf '    %-12s %7s %7s\n' component fetch build
  for c in "${components[@]}"; do
    f=$(awk -F'\t' -v c="$c fetch" '$1 == c {s += $3} END {print s + 0}' "$KUBETRAIN_BUILD_TIMES")
    printf '    %-12s %7s %7s\n' "$c" "$f" "${build_s[$c]}"
    awk -F'\t' -v c="$c" '$1 == c {printf "      %-62s %5s\n", $2, $3}' "$KUBETRAIN_BUILD_TIMES"
  done
} >&2
