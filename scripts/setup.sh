#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test ctriton,
# builds the C extension and makes `import ctriton` work from any directory
# in the python3 on PATH (the .so is copied into python/ctriton/ and a .pth
# file in that python's site-packages points at python/).
# Idempotent; prints nothing when everything is already there.
set -euo pipefail

APT_PACKAGES=(bazel-bootstrap llvm-22-dev libffi-dev python3-dev)

sudo_if_needed() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
run_quiet() {
  if ! "$@" >"$log" 2>&1; then
    echo "setup: failed: $*" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
}

# 1. Debian packages.
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  run_quiet sudo_if_needed apt-get update -q
  run_quiet sudo_if_needed apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# 2. Python test dependencies for the python3 first on PATH.
if ! python3 -c "import numpy, pytest" >/dev/null 2>&1; then
  if [ "$(python3 -c 'import sys; print(sys.prefix)')" = /usr ]; then
    # Debian's own interpreter is externally managed (PEP 668): use apt.
    echo "setup: installing python3-numpy python3-pytest" >&2
    export DEBIAN_FRONTEND=noninteractive
    run_quiet sudo_if_needed apt-get update -q
    run_quiet sudo_if_needed apt-get install -y -q python3-numpy python3-pytest
  else
    echo "setup: pip installing numpy pytest for $(command -v python3)" >&2
    run_quiet python3 -m pip install -q numpy pytest
  fi
fi

# 3. Toolkit pieces that are not Debian packages: CUDA headers and ptxas.
if [ ! -f /usr/local/cuda/include/cuda.h ]; then
  echo "setup: warning: /usr/local/cuda/include/cuda.h not found (CUDA toolkit missing)" >&2
fi
if [ ! -x /usr/local/cuda/bin/ptxas ] && ! command -v ptxas >/dev/null 2>&1; then
  echo "setup: warning: ptxas not found (/usr/local/cuda/bin or PATH): PTX is not assembled" >&2
fi
# 3b. A CUDA disassembler for the tests that read SASS (asm["sass"]: registers
# a warpgroup MMA reads until its wait, atomics' instructions): cuobjdump and
# the nvdisasm it runs, from NVIDIA's wheels where the toolkit has neither.
has_nvdisasm() {
  [ -x /usr/local/cuda/bin/nvdisasm ] || command -v nvdisasm >/dev/null 2>&1 ||
    python3 - <<'PY' 2>/dev/null
import os, sys
import nvidia
sys.exit(0 if any(os.path.exists(os.path.join(p, "cu13", "bin", "nvdisasm")) for p in nvidia.__path__) else 1)
PY
}
if ! has_nvdisasm; then
  if [ "$(python3 -c 'import sys; print(sys.prefix)')" != /usr ]; then
    echo "setup: pip installing nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm (SASS checks)" >&2
    python3 -m pip install -q "nvidia-cuda-cuobjdump>=13,<14" "nvidia-cuda-nvdisasm>=13,<14" >"$log" 2>&1 ||
      echo "setup: warning: no CUDA disassembler could be installed: the SASS checks are skipped" >&2
  else
    echo "setup: warning: no CUDA disassembler (nvdisasm): the SASS checks are skipped" >&2
  fi
fi

# 4. The extension, and ctriton on the python3's path.
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
run_quiet bazel build --color=no --noshow_progress //python:_C.abi3.so
so=bazel-bin/python/_C.abi3.so
if ! cmp -s "$so" python/ctriton/_C.abi3.so; then
  install -m 0644 "$so" python/ctriton/_C.abi3.so.tmp
  mv -f python/ctriton/_C.abi3.so.tmp python/ctriton/_C.abi3.so
fi
site=$(python3 - <<'PY'
import os, site, sysconfig
cands = [sysconfig.get_paths()["purelib"]] + list(getattr(site, "getsitepackages", lambda: [])())
for d in cands:
    if os.path.isdir(d) and os.access(d, os.W_OK):
        print(d); break
else:
    print(site.getusersitepackages())
PY
)
mkdir -p "$site"
pth="$site/ctriton.pth"
if [ "$(cat "$pth" 2>/dev/null)" != "$repo/python" ]; then
  echo "$repo/python" > "$pth"
fi
exit 0
