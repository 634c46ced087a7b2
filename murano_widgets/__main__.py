"""``python -m murano_widgets demo``: see :mod:`murano_widgets.cli`."""

from .cli import main

raise SystemExit(main())
