"""jaxrl_pim.data."""
