"""``python -m simpy_astra``: see :mod:`simpy_astra.cli`."""

import sys

from simpy_astra.cli import main

if __name__ == "__main__":
    sys.exit(main())
