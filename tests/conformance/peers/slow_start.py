"""Correct, but slow to start: sleeps `slow_start.py SECONDS` (default 4) before it reads
its input, as an agent that loads a model or a runtime does."""

import sys
import time

from raw_agent import RawAgent, main

time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0)
main(RawAgent)
