"""Broken beyond repair: reads everything and never answers, never exits on EOF."""

import sys
import time

while sys.stdin.buffer.read(65536):
    pass
time.sleep(3600)
