"""Closes its stdout first, then says why on stderr and exits with status 3: the end of
stdout reaches the checker before the exit does (as a dying agent's often does on a
loaded machine), and the report must still show its exit and its last words."""

import os
import sys
import time

os.close(1)
time.sleep(0.5)  # only widens the window the checker used to read too early
sys.stderr.write("dead_after_closing_stdout: cannot load my configuration\n")
sys.exit(3)
