"""Broken: exits on a line that is not JSON (as a naive `json.loads` loop does)."""

import sys

from raw_agent import RawAgent, main


class DiesOnBadInput(RawAgent):
    def on_invalid_json(self, line: bytes) -> None:
        sys.stderr.write("Traceback: json.decoder.JSONDecodeError\n")
        sys.exit(1)


main(DiesOnBadInput)
