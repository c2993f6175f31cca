"""Benchmarks W1-W4: `python -m benchmarks.run` (see README.md)."""
