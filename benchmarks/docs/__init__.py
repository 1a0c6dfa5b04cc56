"""The parts of ``benchmarks/make_docs.py``, the entry point (its docstring describes the
contract; it puts the parts together into ``--check`` and the generation):

* :mod:`~benchmarks.docs.results`: the results files, the scripts that wrote them, and the
  check of each file against its script;
* :mod:`~benchmarks.docs.blocks`: the generated blocks and values filled into the pages;
* :mod:`~benchmarks.docs.prose`: numbers in prose and benchmark tables from no results file;
* :mod:`~benchmarks.docs.page`: ``docs/benchmarks.md``, generated whole.
"""
