"""Print a line, then end the way the arguments say: an exit code, or a signal sent to itself.

``exit.py 3`` exits with 3; ``exit.py KILL`` dies by SIGKILL (the kubelet reports 137). As a
container's PID 1, which no signal it does not handle can kill, it runs the rest in a child
and ends as a shell would: with 128 + the signal that killed the child.
With ``--unless-restarted FILE`` it fails only the first time: it leaves FILE behind (an
emptyDir survives container restarts in place) and exits 0 when FILE already exists.
"""

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import time

if os.getpid() == 1:
    child = subprocess.run([sys.executable, *sys.argv], check=False)
    sys.exit(128 - child.returncode if child.returncode < 0 else child.returncode)

parser = argparse.ArgumentParser()
parser.add_argument("how", help="an exit code, or a signal name such as KILL")
parser.add_argument("--after", type=float, default=0.0, help="seconds to wait first")
parser.add_argument("--unless-restarted", type=pathlib.Path, help="fail only if this file is absent")
args = parser.parse_args()

print(f"exit.py {args.how} in pod {os.environ.get('HOSTNAME', '?')}", flush=True)
if args.unless_restarted is not None:
    if args.unless_restarted.exists():
        print("restarted in place: succeeding", flush=True)
        sys.exit(0)
    args.unless_restarted.write_text("failed once\n")
time.sleep(args.after)
if args.how.isdigit():
    sys.exit(int(args.how))
os.kill(os.getpid(), getattr(signal, f"SIG{args.how}"))
time.sleep(60)
