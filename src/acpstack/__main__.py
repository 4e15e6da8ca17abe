"""`python -m acpstack` runs the acpstack command."""

import sys

from acpstack.cli import main

sys.exit(main())
