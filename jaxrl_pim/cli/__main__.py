"""``python -m jaxrl_pim.cli``: the ``jaxrl-pim`` command."""

import sys

from jaxrl_pim.cli import main

sys.exit(main())
