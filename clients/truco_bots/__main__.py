"""``python -m truco_bots`` runs the evaluation (same as ``python -m truco_bots.eval``)."""

import sys

from truco_bots.eval import main

sys.exit(main())
