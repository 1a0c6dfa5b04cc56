"""jaxrl_pim.actorq."""
