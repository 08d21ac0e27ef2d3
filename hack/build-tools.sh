#!/usr/bin/env bash
# kwok (fake nodes and pod lifecycle) and kustomize, at release tags from the Go module proxy.
# Output: $KUBETRAIN_CACHE/tools/bin.
#
# kwok gets two changes, made to a copy of the source the proxy serves (kwok_source in lib.sh, with
# the Kubernetes module graph it is built from). First: it deletes a pod by name alone,
# where a kubelet's delete carries the pod's UID as a precondition. A stage kwok plays twice for one
# pod (it replays the pod-delete stage on the event of its own status patch) then deletes the next
# pod of that name too — the replacement an operator has just made. With the precondition that
# second delete is refused, as the kubelet's would be.
#
# And a second (kwok-watch-resume.patch): when the apiserver cuts a watch, kwok watched again from
# resourceVersion "0", so the apiserver sent it every pod again as new, and a stale copy still Pending
# played its stage to Running again (a second PATCH per pod, thousands in a burst). Now it watches
# again from the last version it received, as other clients do; a version too old for the apiserver
# (410 Gone) still ends in a fresh list, as before.
source "$(dirname "$0")/lib.sh"

out="$KUBETRAIN_CACHE/tools"
mkdir -p "$out/bin"
if ! have "$out/bin/kwok" "$KWOK_VERSION" --version || ! from_graph "$out/bin/kwok"; then
  # From the Kubernetes module graph, which holds a copy of kwok's source with these changes
  # (kwok_source in lib.sh).
  k8s_graph
  if [ "$MODE" = fetch ]; then
    step "download the dependencies of kwok $KWOK_VERSION"
    (cd "$K8S_GRAPH" && retry go list -deps sigs.k8s.io/kwok/cmd/kwok >/dev/null)
  else
    step "build kwok $KWOK_BUILD"
    (cd "$K8S_GRAPH" && retry go build -trimpath -ldflags "-s -w" -o "$out/bin/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok >/dev/null)
    mv "$out/bin/kwok.tmp" "$out/bin/kwok"
    mark_graph "$out/bin/kwok"
  fi
fi
if ! have "$out/bin/kustomize" "${KUSTOMIZE_VERSION}" version; then
  # -n: print the commands instead of running them, having downloaded what they need.
  n=(); [ "$MODE" = fetch ] && n=(-n)
  step "go install ${n[*]} sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  GOBIN="$out/bin" retry go install "${n[@]}" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" >/dev/null
fi
step "done"
[ "$MODE" = fetch ] || echo "$out/bin"
