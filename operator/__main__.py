"""``python -m kubetrain.operator`` runs the ``kubetrain`` command."""

import sys

from kubetrain.operator import cli

sys.exit(cli.main())
