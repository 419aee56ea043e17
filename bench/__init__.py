"""Benchmarks (run on demand, never inside the test suite)."""
