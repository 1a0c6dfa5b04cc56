"""jaxrl_pim.marl."""
