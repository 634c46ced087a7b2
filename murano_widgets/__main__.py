"""``python -m murano_widgets demo``: see :mod:`murano_widgets.cli`."""

from murano_widgets.cli import main

raise SystemExit(main())
