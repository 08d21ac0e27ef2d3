#!/usr/bin/env bash
# concurrently.sh [--keep-going] NAME COMMAND [NAME COMMAND]...: run the commands (`bash -c`) side
# by side, each line of their output shown as it comes, prefixed with [NAME]. `make test` runs the
# control plane's Go builds (both cores) beside the realcode tier's pip and apt installs (the
# network) this way.
# When one fails, the others are stopped and this fails, naming it; with --keep-going (for test
# lanes, where every failure is worth seeing) the others run to their end and this fails naming
# every job that failed. Each job's seconds are printed as it ends. Each job runs in a process
# group of its own (set -m), stopped whole (on failure, Ctrl-C or TERM); not in a session of its
# own, which would escape a `nice` given to the whole.
set -euo pipefail
keep_going=""
[ "${1:-}" != --keep-going ] || { keep_going=1; shift; }
[ $# -ge 2 ] && [ $(($# % 2)) = 0 ] ||
  { echo "usage: $0 [--keep-going] NAME COMMAND [NAME COMMAND]..." >&2; exit 2; }
tmp=$(mktemp -d)
declare -A name_of start_of
stop() {
  local pid
  for pid in "${!name_of[@]}"; do kill -TERM -- -"$pid" 2>/dev/null || true; done
  wait || true
  rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 130' INT TERM
i=0
while [ $# -gt 0 ]; do
  i=$((i + 1))
  # The job's own exit status goes to a file: the pipeline's is sed's.
  set -m
  bash -c '(bash -c "$1" 2>&1; echo $? >"$2") | sed -u "s|^|[$3] |"' _ "$2" "$tmp/$i.rc" "$1" </dev/null &
  set +m
  name_of[$!]="$1"; start_of[$!]=$(date +%s); echo "$i" >"$tmp/$!.index"
  shift 2
done
failed=()
while [ ${#name_of[@]} -gt 0 ]; do
  wait -n -p pid || true
  name="${name_of[$pid]}"
  rc=$(cat "$tmp/$(cat "$tmp/$pid.index").rc" 2>/dev/null || echo "?")
  s=$(($(date +%s) - ${start_of[$pid]}))
  unset "name_of[$pid]"
  if [ "$rc" = 0 ]; then
    printf '==> [%s] done in %ss\n' "$name" "$s" >&2
    continue
  fi
  failed+=("[$name]")
  if [ -n "$keep_going" ]; then
    printf '==> FAILED: [%s] (exit %s) after %ss; the others run on\n' "$name" "$rc" "$s" >&2
  else
    printf '==> FAILED: [%s] (exit %s) after %ss; stopping the others: %s\n' "$name" "$rc" "$s" \
      "$(printf '[%s] ' "${name_of[@]}")" >&2
    break
  fi
done
[ ${#failed[@]} = 0 ] || { stop; printf '==> FAILED: %s, the output above\n' "${failed[*]}" >&2; exit 1; }
