"""jaxrl_pim.tabular."""
