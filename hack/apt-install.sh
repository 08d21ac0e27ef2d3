#!/usr/bin/env bash
# apt-install.sh FOR PACKAGE...: install whichever of the Debian packages is not installed yet (as
# root), FOR naming who needs them in the messages. `make test` installs the realcode tier's
# packages while build-node.sh installs a real node's, and dpkg serves one client at a time: a
# second install waits for the first (a lock of our own, then dpkg's own for up to 10 minutes)
# instead of failing on dpkg's lock.
set -euo pipefail
for="$1"; shift
missing=()
for p in "$@"; do
  [ "$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ]; then echo "$for: as root, apt-get install ${missing[*]}" >&2; exit 1; fi
exec 9>"${TMPDIR:-/tmp}/kubetrain-apt.lock"
flock 9
echo "==> [$for] apt-get install ${missing[*]}" >&2
wait_lock=(-o DPkg::Lock::Timeout=600)
apt-get "${wait_lock[@]}" update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -qq "${missing[@]}" >/dev/null
