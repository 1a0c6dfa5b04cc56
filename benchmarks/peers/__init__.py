"""Programs and set-up of the end-to-end opponents (benchmarks/e2e_frameworks.py)."""
