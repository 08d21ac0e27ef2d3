#!/usr/bin/env bash
# Build (or reuse from the cache) everything the local control plane needs, and print
# the directories that hold the binaries, one per line, for PATH or KUBETRAIN_BIN_PATH.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
start=$(date +%s)
"$here/build-tools.sh"
"$here/build-etcd.sh"
"$here/build-k8s.sh"
printf '==> control plane ready in %ss\n' "$(( $(date +%s) - start ))" >&2
