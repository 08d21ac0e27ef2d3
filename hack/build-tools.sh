#!/usr/bin/env bash
# kwok (fake nodes and pod lifecycle) and kustomize, at release tags from the Go module proxy.
# Output: $KUBETRAIN_CACHE/tools/bin.
#
# kwok gets one change, made here to the source the proxy serves: it deletes a pod by name alone,
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
KWOK_BUILD="$KWOK_VERSION+uid-precondition+watch-resume"
mkdir -p "$out/bin"
if ! have "$out/bin/kwok" "$KWOK_VERSION" --version || [ "$(cat "$out/bin/kwok.build" 2>/dev/null)" != "$KWOK_BUILD" ] ||
  ! from_graph "$out/bin/kwok"; then
  # From the Kubernetes module graph (lib.sh), which builds kwok from a copy of its source, changed here.
  k8s_graph
  if [ "$MODE" = fetch ]; then
    step "download the dependencies of kwok $KWOK_VERSION"
    (cd "$K8S_GRAPH" && retry go list -deps sigs.k8s.io/kwok/cmd/kwok >/dev/null)
  else
    step "build kwok $KWOK_BUILD"
    work=$(kwok_source)
    controller="$work/pkg/kwok/controllers/pod_controller.go"
    call='err := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteOpt)'
    grep -qF "$call" "$controller" || { echo "kwok $KWOK_VERSION: the pod delete to amend is not where expected" >&2; exit 1; }
    sed -i "s|$call|opts := deleteOpt\n\topts.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))\n\terr := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)|" "$controller"
    grep -qF 'metav1.NewUIDPreconditions(string(pod.UID))' "$controller"
    resume="$(cd "$(dirname "$0")" && pwd)/kwok-watch-resume.patch"
    # git as patch (Debian's patch may be missing); the ceiling keeps it from finding a repository above.
    apply() { (cd "$work" && GIT_CEILING_DIRECTORIES="$(dirname "$work")" git apply "$@" "$resume"); }
    apply --check 2>/dev/null ||
      { echo "kwok $KWOK_VERSION: the watch options to amend are not where expected ($resume)" >&2; exit 1; }
    apply
    [ "$(grep -c 'opt.setupWatch(&opts)' "$work/pkg/utils/informer/informer.go")" = 2 ]
    (cd "$K8S_GRAPH" && go build -trimpath -ldflags "-s -w" -o "$out/bin/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok)
    mv "$out/bin/kwok.tmp" "$out/bin/kwok"
    echo "$KWOK_BUILD" >"$out/bin/kwok.build"
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
