"""``python -m truco_tools.campaign --short|--long [--out docs/reliability.md]``."""

from truco_tools.campaign.run import main

raise SystemExit(main())
