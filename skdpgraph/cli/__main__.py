"""``python -m skdpgraph.cli``: the ``skdpgraph`` command."""

import sys

from skdpgraph.cli import main

if __name__ == "__main__":
    sys.exit(main())
