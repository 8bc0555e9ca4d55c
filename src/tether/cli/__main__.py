"""``python -m tether.cli``: the ``tether`` command."""

from . import main

raise SystemExit(main())
