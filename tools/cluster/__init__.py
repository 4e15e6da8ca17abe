"""Local clusters for tests and benchmarks: a throwaway PostgreSQL, HAProxy, several `acpstack serve`."""
