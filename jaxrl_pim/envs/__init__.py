"""jaxrl_pim.envs."""
