#!/usr/bin/env bash
# The GPU suite's one device call, prepared on the development machine, and the step back.
#
#   bash benchmarks/gpu_prepare.sh                  # wheels into .whl/, then print the command
#   bash benchmarks/gpu_prepare.sh unpack ARCHIVE   # file a returned archive, unchanged
#
# The device is bare and reaches no package registry; its Python (3.12, x86-64) already has
# jax, flax, optax, chex, orbax-checkpoint, numba, matplotlib and rich. This script downloads
# exactly the wheels it lacks, at the versions installed here (what the tests ran with), into
# an ignored folder (.whl/, carried with the working tree), and prints one command (under
# 2,000 characters) that installs them with --no-index --no-deps into a --target folder, puts
# the project on PYTHONPATH (no install of its own), passes in the commit and the changed
# paths of this checkout (the device may have no git), and runs benchmarks/gpu_suite.py under
# its deadline with the archive written into $OUT. rejax's wheels (e2e_gpu.py's opponent) go
# into .whl/peer/ and a --target folder of their own. Before printing the command it writes
# which parts are fresh (gpu_suite.py --freshness, git's view; .whl/fresh.json, read on the
# device with --fresh-from) and prints the plan.
#
# Options (prepare):
#   --dest DIR         wheel folder (default .whl; the printed command names it)
#   --site DIR         --target folder on the device (default /tmp/jaxrl_pim_site)
#   --peer-site DIR    --target folder of rejax's wheels (default /tmp/jaxrl_pim_peer_site)
#   --python-version V the device's Python (default 3.12; the CPU rehearsal passes its own)
#   --timeout-s N      SIGTERM to the suite after N s, SIGKILL 15 s later (default 540)
#   --suite-args "..." the suite's options (default "--deadline-s 480")
#   --find-links DIR   take the wheels from DIR instead of the package index
set -euo pipefail
cd "$(dirname "$0")/.."

# Distributions the device lacks that the suite's parts import: gymnax (and its gymnasium),
# flashbax (marl_sampling's opponent) and qwix (quant_inference's int8_qwix row).
NEEDED=(gymnax gymnasium farama-notifications flashbax qwix)
# rejax's side of e2e_gpu.py, pinned in benchmarks/peers/sites.py (rejax 0.1 needs gymnax
# < 1.0, the project a newer one): its own folder on the device, never on the project's path.
mapfile -t PEER_SPECS < <(python3 -c \
  "from benchmarks.peers.sites import REJAX_SITE_WHEELS as w; print(*w, sep='\n')")
MAX_WHEEL_BYTES=$((64 * 1024 * 1024))
MAX_COMMAND_CHARS=2000

if [[ "${1:-}" == "unpack" ]]; then
  [[ $# -eq 2 ]] || { echo "usage: bash benchmarks/gpu_prepare.sh unpack ARCHIVE" >&2; exit 2; }
  exec python3 benchmarks/gpu_suite.py --unpack "$2"
fi

dest=.whl
site=/tmp/jaxrl_pim_site
peer_site=/tmp/jaxrl_pim_peer_site
python_version=3.12
timeout_s=540
suite_args="--deadline-s 480"
find_links=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dest) dest="$2"; shift 2 ;;
    --site) site="$2"; shift 2 ;;
    --peer-site) peer_site="$2"; shift 2 ;;
    --python-version) python_version="$2"; shift 2 ;;
    --timeout-s) timeout_s="$2"; shift 2 ;;
    --suite-args) suite_args="$2"; shift 2 ;;
    --find-links) find_links="$2"; shift 2 ;;
    *) echo "gpu_prepare.sh: unknown option $1 (see the header of this script)" >&2; exit 2 ;;
  esac
done
[[ "$timeout_s" =~ ^[0-9]+$ ]] || { echo "gpu_prepare.sh: --timeout-s must be whole seconds" >&2; exit 2; }

specs=()
for name in "${NEEDED[@]}"; do
  version=$(python3 -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name" 2>/dev/null) || {
    echo "gpu_prepare.sh: $name is not installed here; install the project first: python3 -m pip install -e \".[dev]\"" >&2
    exit 2
  }
  specs+=("$name==$version")
done

rm -rf "$dest"
mkdir -p "$dest/peer"
source_opts=()
[[ -n "$find_links" ]] && source_opts=(--no-index --find-links "$find_links")
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python_version" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 ${source_opts[@]+"${source_opts[@]}"} \
  -d "$dest" "${specs[@]}"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python_version" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 ${source_opts[@]+"${source_opts[@]}"} \
  -d "$dest/peer" "${PEER_SPECS[@]}"

bytes=$(du -sb "$dest" | cut -f1)
if (( bytes > MAX_WHEEL_BYTES )); then
  echo "gpu_prepare.sh: $dest holds $bytes bytes, over the 64 MiB the working tree may carry" >&2
  exit 1
fi

# which parts are fresh on each accelerator folder (git is here, not there), and the plan
python3 benchmarks/gpu_suite.py --freshness "$dest/fresh.json" >&2
python3 benchmarks/gpu_suite.py --plan --fresh-from "$dest/fresh.json" $suite_args >&2

commit=$(git rev-parse HEAD)
# tracked changes and untracked files that travel with the working tree (outputs excluded)
changed=$( { git diff --name-only HEAD; git ls-files --others --exclude-standard; } \
  | grep -v -e '^benchmarks/results/' -e '^docs/' -e '\.md$' | head -n 10 | paste -sd, - || true)
if [[ -n "$changed" ]]; then
  echo "warning: this checkout has uncommitted code ($changed): files from this run would" \
       "fail make_docs.py --check; commit first" >&2
fi

pip_install="python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target"
command="$pip_install $site $dest/*.whl && $pip_install $peer_site $dest/peer/*.whl && export PYTHONPATH=$site:\$PWD JAXRL_PIM_PEER_SITE=$peer_site JAXRL_PIM_SOURCE_COMMIT=$commit JAXRL_PIM_SOURCE_DIRTY='$changed' MPLBACKEND=Agg PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false || exit 1; timeout -k 15 $timeout_s python3 benchmarks/gpu_suite.py --out /tmp/jaxrl_pim_gpu_suite --archive \$OUT --fresh-from $dest/fresh.json $suite_args"
if (( ${#command} > MAX_COMMAND_CHARS )); then
  echo "gpu_prepare.sh: the device command is ${#command} characters, over $MAX_COMMAND_CHARS" >&2
  exit 1
fi
echo "wheels: $dest ($bytes bytes): ${specs[*]}; $dest/peer: ${PEER_SPECS[*]}" >&2
echo "device call: command below, carry [\"$dest\"], timeout_s 600; then: bash benchmarks/gpu_prepare.sh unpack <the returned .tar.gz>" >&2
printf '%s\n' "$command"
