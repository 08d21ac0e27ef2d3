"""The client is what a notebook installs kubetrain for: it must not drag the operator in."""

from __future__ import annotations

import subprocess
import sys


def test_the_client_never_imports_the_reconciler_or_the_runtime() -> None:
    probe = (
        "import sys; from kubetrain import client; "
        "print(sorted(m for m in sys.modules if m.startswith(('kubetrain.operator.runtime', "
        "'kubetrain.operator.trainingjob_controller', 'kubetrain.operator.lifecycle', 'kubetrain.devcluster'))))"
    )
    out = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "[]", out.stderr
