"""`python -m consumer`: the same as `cdfbridge-consumer`."""

import sys

from consumer.cli import main

sys.exit(main())
