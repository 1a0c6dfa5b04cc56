"""Tests for jaxrl_pim.rl."""
