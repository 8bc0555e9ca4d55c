"""``python -m tether.cli``: the ``tether`` command."""

from . import console

console()
