"""acpstack's benchmark: W1-W6 from BENCHMARKS.md, side by side with the official SDKs."""
