"""The benchmarks: one module per study, run as ``python benchmarks/<name>.py`` or
``python -m benchmarks.<name>`` (see ``harness.py`` for the shared conventions and
``make_docs.py`` for how results reach the docs). Not installed with the library."""
