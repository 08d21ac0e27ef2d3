"""``python -m kubetrain.operator`` runs the operator (the ``kubetrain-operator`` command)."""

import sys

from kubetrain.operator import main

sys.exit(main.main())
