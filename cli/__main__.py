"""``python -m kubetrain.cli``: the ``kubetrain`` command."""

import sys

from kubetrain.cli import main

sys.exit(main.main())
