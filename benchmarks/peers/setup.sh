#!/usr/bin/env bash
# Make one opponent's own virtual environment for benchmarks/e2e_frameworks.py.
#
#   benchmarks/peers/setup.sh NAME        NAME: agilerl | benchmarl | rejax | sb3
#   benchmarks/peers/setup.sh NAME --force    remake it from scratch
#
# Each opponent gets its own venv under .peers/NAME/ at the repository root (git ignores it;
# JAXRL_PIM_PEERS=DIR puts them elsewhere), never the project's own environment: the
# torch-based opponents pin torch/tensordict/torchrl versions that conflict with each other
# and with the project's jax. Versions are bounded below; the versions installed are written to
# .peers/NAME/versions.txt (pip freeze) and read back by the benchmark into its results file.
#
# Torch: a CPU-only wheel (torch==$PEERS_TORCH+cpu, default 2.13.0) is used where pip can reach
# one (a --find-links folder or an extra index in pip's configuration, e.g. PyTorch's own CPU
# wheel index given as PIP_EXTRA_INDEX_URL); otherwise the default wheel from PyPI is installed
# (with its CUDA libraries, several GiB; the script says so). The rejax venv gets the jax
# version of the project's interpreter ($PROJECT_PYTHON, default python3) so both sides run
# the same jax.
set -euo pipefail

usage() { echo "usage: $0 {agilerl|benchmarl|rejax|sb3} [--force]" >&2; exit 2; }
[ $# -ge 1 ] || usage
NAME=$1
FORCE=${2:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PEERS=${JAXRL_PIM_PEERS:-$ROOT/.peers}
PYTHON=${PYTHON:-python3}
PROJECT_PYTHON=${PROJECT_PYTHON:-python3}
TORCH=${PEERS_TORCH:-2.13.0}
ENV=$PEERS/$NAME

case "$NAME" in
  agilerl)
    NEEDS_TORCH=1
    # agilerl 2.58 imports peft from its core modules but lists it only in extras
    PKGS=("agilerl>=2.58,<2.59" "mpe2>=1.1,<1.2" "pettingzoo>=1.25,<1.27" "peft>=0.21,<0.22") ;;
  benchmarl)
    # BenchMARL 1.5 needs torchrl < 0.12 (and so tensordict < 0.12); its PettingZoo tasks
    # load simple_spread from pettingzoo.mpe, which pettingzoo 1.24 still ships. rejax 0.1
    # steps gymnax environments with the five-value step of gymnax < 1.0.
    NEEDS_TORCH=1
    PKGS=("benchmarl>=1.5.2,<1.6" "torchrl>=0.11,<0.12" "tensordict>=0.11,<0.12"
          "pettingzoo[mpe]>=1.24.3,<1.25" "hydra-core>=1.3,<1.4") ;;
  rejax)
    NEEDS_TORCH=0
    JAXV=$("$PROJECT_PYTHON" -c 'import jax; print(jax.__version__)' 2>/dev/null || true)
    if [ -n "$JAXV" ]; then JAXSPEC="jax==$JAXV"; else JAXSPEC="jax>=0.4.34,<0.11"; fi
    PKGS=("rejax>=0.1.3,<0.2" "$JAXSPEC" "gymnax>=0.0.9,<1.0") ;;
  sb3)
    NEEDS_TORCH=1
    PKGS=("stable-baselines3>=2.9,<2.10" "gymnasium>=1.0,<1.5") ;;
  *) usage ;;
esac

if [ -x "$ENV/bin/python" ] && [ -f "$ENV/versions.txt" ] && [ "$FORCE" != "--force" ]; then
  echo "$ENV exists (versions in $ENV/versions.txt); --force remakes it"
  exit 0
fi
rm -rf "$ENV"
mkdir -p "$PEERS"
"$PYTHON" -m venv "$ENV"
PIP=("$ENV/bin/python" -m pip install --disable-pip-version-check -q)
"${PIP[@]}" --upgrade pip wheel

TORCH_NOTE=""
if [ "$NEEDS_TORCH" = 1 ]; then
  if "${PIP[@]}" "torch==$TORCH+cpu" 2>/dev/null; then
    TORCH_NOTE="torch $TORCH+cpu (CPU-only wheel)"
  else
    echo "no CPU-only torch wheel ($TORCH+cpu) reachable: installing the default torch wheel" \
         "from PyPI, which brings its CUDA libraries (several GiB)" >&2
    "${PIP[@]}" "torch==$TORCH"
    TORCH_NOTE="torch $TORCH (default wheel with CUDA libraries)"
  fi
  # keep the torch just installed: the opponent's own requirements must accept it
  "$ENV/bin/python" -c 'import torch; print(torch.__version__)' > "$ENV/torch-pin.txt"
  "${PIP[@]}" "${PKGS[@]}" "torch==$(cat "$ENV/torch-pin.txt")"
else
  "${PIP[@]}" "${PKGS[@]}"
fi

"$ENV/bin/python" -m pip freeze --disable-pip-version-check > "$ENV/versions.txt.tmp"
mv "$ENV/versions.txt.tmp" "$ENV/versions.txt"
du -sh "$ENV" | awk '{print "size on disk: " $1}'
echo "made $ENV${TORCH_NOTE:+ with $TORCH_NOTE}"
