#!/usr/bin/env bash
# Build (or reuse from the cache) everything the local cluster needs — the control plane, the
# schedulers the tests run beside kube-scheduler (scheduler-plugins, Kueue), and a real node's
# parts — and print the directories that hold the binaries, one per line, for PATH or
# KUBETRAIN_BIN_PATH. A real node needs root (Debian packages, namespaces): where its
# parts cannot be had, say so and go on; whatever needs a real node then fails, naming them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
start=$(date +%s)
"$here/build-tools.sh"
"$here/build-etcd.sh"
"$here/build-k8s.sh"
"$here/build-schedulers.sh"
if ! "$here/build-node.sh"; then
  printf '==> WARNING: real-node parts unavailable (see above); kwok nodes only\n' >&2
fi
printf '==> local cluster ready in %ss\n' "$(( $(date +%s) - start ))" >&2
