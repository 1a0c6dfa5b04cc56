"""jaxrl_pim.quant."""
