"""Opponents run from a ``pip install --target`` folder instead of a venv (``--peer-site
NAME=DIR`` of ``benchmarks/e2e_frameworks.py`` and ``benchmarks/e2e_gpu.py``): a bare GPU
host has no venvs and no network, only wheels installed with ``--no-index --no-deps
--target DIR``; the side runs with the parent's interpreter and ``PYTHONPATH=DIR:<repo>``.
Standard library only."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path


def site_problem(name: str, site: Path) -> str | None:
    """Why opponent ``name`` cannot run from the folder ``site`` (missing, or no distribution
    of that name installed in it), None when it can; reads the folder's metadata and imports
    nothing (a broken import shows as the side's failure, with its output)."""
    if not Path(site).is_dir():
        return f"no folder {site} (--peer-site {name}=DIR)"
    found = {(d.metadata["Name"] or "").lower().replace("_", "-")
             for d in metadata.distributions(path=[str(site)])}
    if name.lower() not in found:
        return f"{name} is not installed in {site} (pip install --target {site} its wheels)"
    return None


def parse_sites(items: list[str], names: list[str]) -> dict[str, Path]:
    """``["NAME=DIR", ...]`` as ``{name: folder}``; ValueError on a malformed item or a name
    not in ``names``."""
    out = {}
    for item in items:
        name, sep, folder = item.partition("=")
        if not sep or name not in names or not folder:
            raise ValueError(f"--peer-site takes NAME=DIR with NAME one of {', '.join(names)}; "
                             f"got {item!r}")
        out[name] = Path(folder)
    return out


#: rejax's side on a host that has jax, jaxlib, flax, optax, chex, numpy, absl-py, six,
#: cloudpickle, pyyaml, matplotlib and seaborn but no gymnasium: the wheels its DQN / PPO
#: import chain loads (``import rejax``, ``get_algo``, ``rejax.evaluate``, the envs made),
#: for ``pip download --no-deps`` and ``pip install --no-index --no-deps --target DIR``
#: (each with the import that needs it). tensorflow-probability's declared gast and dm-tree's
#: attrs are never imported on this path and are left out.
REJAX_SITE_WHEELS: dict[str, str] = {
    "rejax==0.1.3": "rejax (the opponent)",
    "gymnax==0.0.9": "rejax.algos.algorithm, rejax.evaluate (gymnax < 1.0's 5-value step)",
    "distrax==0.1.9": "rejax.networks (action distributions)",
    "tfp-nightly==0.26.0.dev20261027": "distrax (tensorflow_probability.substrates.jax; "
                                      "distrax 0.1.9 requires tfp-nightly)",
    "dm-tree==0.1.10": "tensorflow_probability's jax substrate (import tree)",
    "wrapt==2.1.2": "dm-tree (tree/__init__.py imports wrapt)",
    "decorator==5.3.1": "tensorflow_probability (import decorator)",
    "gymnasium==1.3.0": "gymnax 0.0.9 (its spaces / registration import gymnasium)",
    "farama-notifications==0.0.6": "gymnasium (import farama_notifications)",
}
