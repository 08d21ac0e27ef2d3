# Shared helpers for hack/ scripts. Source it; do not run it.
# Every build is cached by version under $KUBETRAIN_CACHE (default ~/.cache/kubetrain).

set -euo pipefail

KUBETRAIN_CACHE="${KUBETRAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubetrain}"
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"     # the etcd that K8S_VERSION's go.mod requires
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
KWOK_BUILD="$KWOK_VERSION+uid-precondition+watch-resume"  # with kwok_source's two changes
KUEUE_VERSION="${KUEUE_VERSION:-v0.19.2}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.12.4}"
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.8.2}"
# Every build gets the same flags, so the standard library and whatever else two builds share at
# one version compile once: -trimpath; and no debug information, which every link strips anyway
# (-ldflags=-s): the compiler then writes no DWARF (-dwarf=false: about 10 % less CPU, etcd's cold
# compile 112 s against 125 s of user and system time, the binary byte for byte as large). A
# build's own -ldflags (the version's -X) replaces this one and says -s -w itself.
export CGO_ENABLED=0 GOTOOLCHAIN=local
export GOFLAGS="${GOFLAGS:--mod=mod -trimpath -gcflags=all=-dwarf=false -ldflags=-s}"
# The compiler and linker collect garbage less often: a fifth of a compile's user time was its
# collector (etcd's cold compile: 107 CPU-seconds at GOGC=400 against 125 at the default 100, and
# 102 at 800). A heap may then grow to five times what is live; GOMEMLIMIT keeps each of the two
# processes a build runs at once (-p is the cores) under 4 GiB, where the collector runs as before.
export GOGC="${GOGC:-400}" GOMEMLIMIT="${GOMEMLIMIT:-4GiB}"

# MODE: `build` (the default) builds what is missing; `fetch` (first argument `fetch`) only resolves
# and downloads what that build will need, printing nothing on stdout, so that
# build-control-plane.sh can download every component's modules at once while another compiles.
MODE="${1:-build}"
case "$MODE" in build | fetch) ;; *) echo "usage: $0 [fetch]" >&2; exit 2 ;; esac
# Step lines name their component ("==> [etcd] build etcd v3.6.8"); when a step ends, its seconds
# are printed and, under build-control-plane.sh, added to $KUBETRAIN_BUILD_TIMES for its table.
COMPONENT="$(basename "$0" .sh)"; COMPONENT="${COMPONENT#build-}"
[ "$MODE" = build ] || COMPONENT+=" fetch"
STEP="start"
STEP_T0=$(date +%s)
step_end() {
  local s=$(($(date +%s) - STEP_T0))
  [ "$STEP" != start ] && [ "$STEP" != done ] || return 0
  printf '    [%s] %s: %ss\n' "$COMPONENT" "$STEP" "$s" >&2
  [ -z "${KUBETRAIN_BUILD_TIMES:-}" ] || printf '%s\t%s\t%s\n' "$COMPONENT" "$STEP" "$s" >>"$KUBETRAIN_BUILD_TIMES"
}
step() { step_end; STEP="$*"; STEP_T0=$(date +%s); printf '==> [%s] %s\n' "$COMPONENT" "$*" >&2; }
# Any failure names the step it happened in.
trap 'rc=$?; [ $rc -eq 0 ] || printf "FAILED (exit %s) in [%s] step: %s\n" "$rc" "$COMPONENT" "$STEP" >&2' EXIT

# retry CMD...: module downloads fail transiently (proxy resets, timeouts); other errors do not.
retry() {
  local attempt=1 max=5 delay=5 out
  while true; do
    if out=$("$@" 2>&1); then printf '%s' "$out"; return 0; fi
    if [ $attempt -ge $max ] || ! grep -qiE 'timeout|timed out|connection reset|EOF|TLS handshake|50[234]|temporary|i/o timeout|no such host' <<<"$out"; then
      printf '%s\n' "$out" >&2
      return 1
    fi
    printf 'transient failure (attempt %s/%s), retrying in %ss\n' "$attempt" "$max" "$delay" >&2
    sleep $delay; attempt=$((attempt + 1)); delay=$((delay * 2))
  done
}

# have BIN VERSION_SUBSTRING ARGS...: the cached binary exists and reports the version.
# (Output is captured first: `grep -q` in a pipeline would SIGPIPE the binary under pipefail.)
have() {
  local bin=$1 want=$2 out; shift 2
  [ -x "$bin" ] || return 1
  out=$("$bin" "$@" 2>&1) || return 1
  [[ "$out" == *"$want"* ]]
}

# module_file MODULE@VERSION [FIELD]: a field of what `go mod download -json` says of it (Dir: its
# source's directory; GoMod: its go.mod), once it is downloaded.
module_file() { retry go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "${2:-Dir}"; }

# The Kubernetes module graph: one wrapper module requires Kubernetes and the three components built
# on its client libraries (Kueue, kwok, CoreDNS), so what they share — k8s.io/api, client-go,
# apimachinery, apiserver, grpc, protobuf, golang.org/x/sys and the rest, four fifths of each one's
# code — is at one version and compiles once. (Each built from its own graph compiled all of it
# again, for a few patch versions' difference: kwok 164 s, Kueue 172 s and CoreDNS 51 s of a cold
# build.) The version of every module is Kubernetes' own: the graph is resolved for Kubernetes alone
# first, and each module in it is then pinned there (`replace M => M v`), so the control plane the
# tests run is built exactly as it was released, and Kueue, kwok and CoreDNS on its libraries
# (Kueue v0.19.2 was released on k8s.io v0.36.2, cel-go v0.27 and golang.org/x/sys v0.46; kwok on
# v0.36.1; CoreDNS on v0.34.0). Not in it: etcd (a server on its own grpc), containerd, kustomize,
# and scheduler-plugins, whose v0.34 release does not compile against Kubernetes 1.36's scheduler
# framework.
#
# `go install k8s.io/kubernetes/cmd/...@v` is refused because k8s.io/kubernetes's go.mod replaces
# its staging modules with local paths, so the wrapper replaces every staging module with its
# published v0.N.P, copying the replace list and godebug line from k8s.io/kubernetes's own go.mod
# (an unpublished staging module, e.g. sample-cli-plugin, gets an empty local stub).
K8S_GRAPH="$KUBETRAIN_CACHE/k8s-graph"
K8S_GRAPH_SPEC="k8s.io/kubernetes $K8S_VERSION pinned; sigs.k8s.io/kueue $KUEUE_VERSION, sigs.k8s.io/kwok $KWOK_BUILD, github.com/coredns/coredns $COREDNS_VERSION"
K8S_MAINS=(k8s.io/kubernetes/cmd/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,kubelet,kube-proxy})
# k8s_graph: write and resolve the wrapper module once (the fetches of build-control-plane.sh call
# it side by side: the first writes it, under a lock, and the others wait for it); then it is reused
# while K8S_GRAPH_SPEC is unchanged. CoreDNS's main package (build-node.sh) lives in it, under coredns/.
k8s_graph() {
  graph_resolved() { [ "$(cat "$K8S_GRAPH/.resolved" 2>/dev/null)" = "$K8S_GRAPH_SPEC" ]; }
  ! graph_resolved || return 0
  step "resolve the Kubernetes module graph (Kubernetes $K8S_VERSION; Kueue, kwok and CoreDNS on its versions)"
  mkdir -p "$K8S_GRAPH"
  (
    flock 9
    ! graph_resolved || exit 0
    cd "$K8S_GRAPH"
    local gomod staging_version="v0.${K8S_VERSION#v1.}" m replaces pins
    gomod=$(module_file "k8s.io/kubernetes@$K8S_VERSION" GoMod)
    replaces=$(
      for m in $(sed -n '/^replace (/,/^)/p' "$gomod" | awk '/=> \.\/staging/{print $1}'); do
        if retry go list -m "$m@$staging_version" >/dev/null 2>&1; then
          echo "	$m => $m $staging_version"
        else
          mkdir -p "stubs/$m" && printf 'module %s\n\ngo 1.21\n' "$m" >"stubs/$m/go.mod"
          echo "	$m => ./stubs/$m"
        fi
      done
    )
    # wrapper REQUIRES REPLACES: the go.mod.
    wrapper() {
      rm -f go.mod go.sum
      printf 'module kubetrain.dev/k8s-graph\n\n%s\n%s\n\nrequire (\n%s\n)\n\nreplace (\n%s\n)\n' \
        "$(grep -E '^go ' "$gomod")" "$(grep -E '^godebug' "$gomod" || true)" "$1" "$2" >go.mod
    }
    wrapper "	k8s.io/kubernetes $K8S_VERSION" "$replaces"
    retry go get "${K8S_MAINS[@]/%/@$K8S_VERSION}" >/dev/null
    # Every module of that graph not replaced already, pinned at the version Kubernetes has.
    pins=$(go list -m -f '{{if and (not .Main) (not .Replace)}}	{{.Path}} => {{.Path}} {{.Version}}{{end}}' all | sed '/^$/d')
    # kwok from a changed copy of its source (the go command lays no overlay over the module cache).
    kwok_source
    wrapper "	k8s.io/kubernetes $K8S_VERSION
	sigs.k8s.io/kueue $KUEUE_VERSION
	sigs.k8s.io/kwok $KWOK_VERSION
	github.com/coredns/coredns $COREDNS_VERSION" "$replaces
	sigs.k8s.io/kwok => ./kwok
$pins"
    retry go get "${K8S_MAINS[@]/%/@$K8S_VERSION}" "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION" \
      "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "github.com/coredns/coredns@$COREDNS_VERSION" >/dev/null
    echo "$K8S_GRAPH_SPEC" >.resolved
  ) 9>"$K8S_GRAPH.lock"
}
# kwok_source: a copy of kwok's source in the graph, with build-tools.sh's two changes (its header
# says why): made once, with the graph, so that nothing rewrites it under a build or a fetch.
kwok_source() {
  local src work="$K8S_GRAPH/kwok" call resume
  src=$(module_file "sigs.k8s.io/kwok@$KWOK_VERSION")
  rm -rf "$work" && cp -r "$src" "$work" && chmod -R u+w "$work"
  # The pod delete carries the pod's UID as a precondition.
  local controller="$work/pkg/kwok/controllers/pod_controller.go"
  call='err := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteOpt)'
  grep -qF "$call" "$controller" || { echo "kwok $KWOK_VERSION: the pod delete to amend is not where expected" >&2; return 1; }
  sed -i "s|$call|opts := deleteOpt\n\topts.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))\n\terr := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)|" "$controller"
  grep -qF 'metav1.NewUIDPreconditions(string(pod.UID))' "$controller"
  # A watch resumes from the last version it received. git as patch (Debian's patch may be
  # missing); the ceiling keeps it from finding a repository above.
  resume="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kwok-watch-resume.patch"
  if ! (cd "$work" && GIT_CEILING_DIRECTORIES="$K8S_GRAPH" git apply --check "$resume" 2>/dev/null); then
    echo "kwok $KWOK_VERSION: the watch options to amend are not where expected ($resume)" >&2; return 1
  fi
  (cd "$work" && GIT_CEILING_DIRECTORIES="$K8S_GRAPH" git apply "$resume")
  [ "$(grep -c 'opt.setupWatch(&opts)' "$work/pkg/utils/informer/informer.go")" = 2 ]
}
# from_graph BIN: BIN was built from the Kubernetes module graph as it is now (mark_graph BIN... says so,
# beside each binary), so a change of any of its versions rebuilds everything built from it.
from_graph() { [ "$(cat "$(dirname "$1")/.$(basename "$1").graph" 2>/dev/null)" = "$K8S_GRAPH_SPEC" ]; }
mark_graph() { local b; for b; do echo "$K8S_GRAPH_SPEC" >"$(dirname "$b")/.$(basename "$b").graph"; done; }
# k8s_ldflags: the version a Kubernetes command reports (-X), and -s -w.
k8s_ldflags() {
  local minor=${K8S_VERSION#v1.} pkg flags="-s -w"; minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  printf '%s' "$flags"
}
