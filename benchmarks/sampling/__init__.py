"""The parts of ``benchmarks/marl_sampling.py``, the entry point (its docstring describes the
study; it measures one agent count after another and writes the results file):

* :mod:`~benchmarks.sampling.memory`: bytes per row and per round, the memory of this host
  and device, the capacity that fits;
* :mod:`~benchmarks.sampling.rounds`: the JAX sampling rounds and the buffers they read;
* :mod:`~benchmarks.sampling.opponents`: the original, vectorised NumPy and flashbax samplers,
  and the library's rounds timed against them;
* :mod:`~benchmarks.sampling.summary`: the headline numbers, from the stored records;
* :mod:`~benchmarks.sampling.tables`: the Markdown tables and the plot.
"""
