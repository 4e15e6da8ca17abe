"""Broken beyond repair: exits with status 3 at once, saying why on stderr."""

import sys

sys.stderr.write("dead_at_start: cannot load my configuration\n")
sys.exit(3)
