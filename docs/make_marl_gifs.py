"""Write the GIFs of docs/marl.md: a trained and a random spread-3 policy, side by side.

Trains MADDPG on JaxMARL's ``MPE_simple_spread_v3`` from the command line (the settings of
``benchmarks/marl_jaxmarl.py``: 300 episodes x 8 envs, seed 0; a few minutes on 2 CPU cores)
into a scratch checkpoint folder, then draws one evaluation episode (seed 0, the same start)
with ``jaxrl-pim marl evaluate --render``: the greedy trained policy and the uniform-random
policy on the checkpoint's world.

    python docs/make_marl_gifs.py            # writes docs/assets/marl_spread3_{trained,random}.gif
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "assets"
TRAIN = ["marl", "--env", "jaxmarl:MPE_simple_spread_v3", "--algo", "maddpg",
         "--episodes", "300", "--num-envs", "8", "--capacity", "100000", "--batch-size", "256",
         "--learning-starts", "2048", "--update-every", "16", "--seed", "0", "--no-progress"]


def jaxrl_pim(*args: str) -> None:
    """Run ``jaxrl-pim ARGS`` with this interpreter; stop on failure."""
    subprocess.run([sys.executable, "-m", "jaxrl_pim.cli", *args], check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ASSETS,
                    help="folder of the two GIFs (default: docs/assets)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = str(Path(tmp) / "run")
        jaxrl_pim(*TRAIN, "--checkpoint", ckpt)
        for policy in ("greedy", "random"):
            name = "trained" if policy == "greedy" else "random"
            jaxrl_pim("marl", "evaluate", "--checkpoint", ckpt, "--episodes", "100",
                      "--seed", "0", "--policy", policy,
                      "--render", str(args.out / f"marl_spread3_{name}.gif"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
