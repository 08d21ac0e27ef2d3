#!/usr/bin/env bash
# The optional gang-scheduling and queueing parts kubetrain is tested against:
# - scheduler-plugins' scheduler (Coscheduling), run as a second scheduler, and its controller (it
#   keeps PodGroups' status, whose changes wake a waiting gang up). Its release does not
#   build as published (k8s v0.34.7 staging modules it pins are refused by the proxy), so, as
#   build-k8s.sh does for Kubernetes, a wrapper module pins every k8s.io module to one served set.
# - Kueue, from the Kubernetes module graph (lib.sh).
# Their CRDs and webhook manifests come from the module archives and are kept beside the binaries.
# Output: $KUBETRAIN_CACHE/schedulers/bin (and ../manifests). Idempotent.
source "$(dirname "$0")/lib.sh"

SCHEDULER_PLUGINS_VERSION="${SCHEDULER_PLUGINS_VERSION:-v0.34.7}"
SCHEDULER_PLUGINS_K8S="${SCHEDULER_PLUGINS_K8S:-v1.34.4}"
VOLCANO_VERSION="${VOLCANO_VERSION:-v1.10.0}"
out="$KUBETRAIN_CACHE/schedulers"
mkdir -p "$out/bin" "$out/manifests"

stamp="$out/bin/.coscheduling-$SCHEDULER_PLUGINS_VERSION"
if [ ! -x "$out/bin/coscheduling-scheduler" ] || [ ! -x "$out/bin/scheduler-plugins-controller" ] || [ ! -e "$stamp" ]; then
  step "download sigs.k8s.io/scheduler-plugins@$SCHEDULER_PLUGINS_VERSION"
  dir=$(module_file "sigs.k8s.io/scheduler-plugins@$SCHEDULER_PLUGINS_VERSION")
  src="$out/src/scheduler-plugins"
  mkdir -p "$src"
  staging="v0.${SCHEDULER_PLUGINS_K8S#v1.}"
  step "write the wrapper module (k8s.io at $SCHEDULER_PLUGINS_K8S / $staging)"
  {
    echo "module kubetrain.dev/scheduler-plugins-build"
    echo
    grep -E '^go ' "$dir/go.mod"
    echo
    echo "require sigs.k8s.io/scheduler-plugins $SCHEDULER_PLUGINS_VERSION"
    echo
    echo "replace ("
    # Every k8s.io module the release replaces, at the one version the proxy serves in full.
    grep -hoE '^\s*(replace )?k8s\.io/[a-z0-9-]+ =>' "$dir/go.mod" | sed -E 's/^\s*(replace )?//; s/ =>//' | sort -u |
      while read -r m; do
        case "$m" in
          k8s.io/kubernetes) echo "	$m => $m $SCHEDULER_PLUGINS_K8S" ;;
          k8s.io/legacy-cloud-providers) ;;
          *) echo "	$m => $m $staging" ;;
        esac
      done
    echo ")"
  } > "$src/go.mod"
  cd "$src"
  step "resolve the dependencies of cmd/scheduler and cmd/controller"
  retry go get "sigs.k8s.io/scheduler-plugins/cmd/scheduler@$SCHEDULER_PLUGINS_VERSION" \
    "sigs.k8s.io/scheduler-plugins/cmd/controller@$SCHEDULER_PLUGINS_VERSION" >/dev/null
  if [ "$MODE" = fetch ]; then
    retry go list -deps sigs.k8s.io/scheduler-plugins/cmd/scheduler sigs.k8s.io/scheduler-plugins/cmd/controller >/dev/null
  else
    # One go build for both: their links run side by side.
    step "build the scheduler-plugins scheduler and controller $SCHEDULER_PLUGINS_VERSION"
    rm -rf "$out/bin.tmp" && mkdir -p "$out/bin.tmp"
    go build -trimpath -ldflags "-s -w" -o "$out/bin.tmp/" \
      sigs.k8s.io/scheduler-plugins/cmd/scheduler sigs.k8s.io/scheduler-plugins/cmd/controller
    mv "$out/bin.tmp/scheduler" "$out/bin/coscheduling-scheduler"
    mv "$out/bin.tmp/controller" "$out/bin/scheduler-plugins-controller"
    rmdir "$out/bin.tmp"
    # The PodGroup CRD, and ElasticQuota's: the controller runs that resource's controller too.
    install -m 0644 "$dir/manifests/coscheduling/crd.yaml" "$out/manifests/coscheduling-crd.yaml"
    install -m 0644 "$dir/manifests/capacityscheduling/crd.yaml" "$out/manifests/elasticquota-crd.yaml"
    touch "$stamp"
  fi
fi

if [ ! -x "$out/bin/kueue" ] || ! from_graph "$out/bin/kueue"; then
  # From the Kubernetes module graph (lib.sh). (Not `go install ...@version`: that also reads the
  # module's version list for deprecation notices, which the proxy here refuses: 403.)
  k8s_graph
  dir=$(module_file "sigs.k8s.io/kueue@$KUEUE_VERSION")
  if [ "$MODE" = fetch ]; then
    step "download the dependencies of kueue $KUEUE_VERSION"
    (cd "$K8S_GRAPH" && retry go list -deps sigs.k8s.io/kueue/cmd/kueue >/dev/null)
  else
    step "build kueue $KUEUE_VERSION"
    (cd "$K8S_GRAPH" && retry go build -trimpath -ldflags "-s -w" -o "$out/bin/kueue.tmp" sigs.k8s.io/kueue/cmd/kueue >/dev/null)
    mv "$out/bin/kueue.tmp" "$out/bin/kueue"
    rm -rf "$out/manifests/kueue" && mkdir -p "$out/manifests/kueue"
    cp -r "$dir/config/components/crd/bases" "$out/manifests/kueue/crd"
    cp "$dir/config/components/webhook/manifests.yaml" "$out/manifests/kueue/webhooks.yaml"
    chmod -R u+w "$out/manifests/kueue"
    mark_graph "$out/bin/kueue"
  fi
fi
# Volcano's modules do not build here (they point at a staging directory missing from the
# module archive), and the proxy serves v1.10.0 as the newest: only its PodGroup CRD is kept, to
# check what kubetrain renders for Volcano against Volcano's own schema.
if [ ! -e "$out/manifests/volcano-podgroup-crd.yaml" ]; then
  step "download volcano.sh/volcano@$VOLCANO_VERSION (its PodGroup CRD)"
  dir=$(module_file "volcano.sh/volcano@$VOLCANO_VERSION")
  cp "$dir/config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml" "$out/manifests/volcano-podgroup-crd.yaml"
  chmod u+w "$out/manifests/volcano-podgroup-crd.yaml"
fi
step "done"
[ "$MODE" = fetch ] || echo "$out/bin"
