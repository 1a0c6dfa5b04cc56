"""Tests for the benchmark scripts under benchmarks/."""
