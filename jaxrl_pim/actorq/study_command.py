"""Deprecated: the ``ptq`` / ``qat`` commands moved to :mod:`jaxrl_pim.studies.command`."""

from jaxrl_pim._deprecated import moved_module
from jaxrl_pim.studies.command import register, run_ptq_command, run_qat_command

moved_module(__name__, "jaxrl_pim.studies.command")

__all__ = ["register", "run_ptq_command", "run_qat_command"]
