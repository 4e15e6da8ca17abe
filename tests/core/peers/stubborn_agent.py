"""An 'agent' that ignores stdin EOF and SIGTERM: only SIGKILL ends it."""

import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdin.read()  # returns at EOF; keep going anyway
while True:
    time.sleep(1)
