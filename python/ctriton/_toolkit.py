"""Where the CUDA tools come from: ptxas and libdevice.

The lookup itself is in C (jit_find_ptxas, be_nvptx_libdevice_path): the
first of $CTRITON_PTXAS_PATH, $TRITON_PTXAS_PATH, $CUDA_HOME/bin,
$CUDA_PATH/bin, /usr/local/cuda/bin, the ``nvidia-cuda-nvcc`` pip package's
copy, PATH. Only the pip package needs Python to be found; ``register()``
(run at ``import ctriton``) tells C where it is. Without any ptxas a GPU
kernel's PTX goes to the CUDA driver, which compiles it itself
(``warn_no_ptxas`` says so, once).
"""
import importlib.util
import os
import warnings

from . import _C

# Where nvidia-cuda-nvcc puts ptxas, under the `nvidia` namespace package:
# CUDA 13 wheels in cu13/, CUDA 12 wheels in cuda_nvcc/.
_PKG_PTXAS = ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas", "cu12/bin/ptxas")
_warned = False


def pkg_ptxas():
    """The ptxas of an installed nvidia-cuda-nvcc package, or None."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for root in spec.submodule_search_locations or ():
        for rel in _PKG_PTXAS:
            p = os.path.join(root, rel)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    return None


def register():
    _C.set_pkg_ptxas(pkg_ptxas())


def ptxas_path():
    """The ptxas GPU compiles run, or None."""
    return _C.ptxas_path()


def libdevice_path():
    """The libdevice.10.bc GPU compiles link, or None."""
    return _C.libdevice_path()


def warn_no_ptxas():
    """Warns, once per process, that PTX is handed to the driver."""
    global _warned
    if _warned:
        return
    _warned = True
    warnings.warn("ctriton: ptxas not found (CTRITON_PTXAS_PATH, TRITON_PTXAS_PATH, CUDA_HOME, "
                  "CUDA_PATH, /usr/local/cuda, the nvidia-cuda-nvcc package, PATH): kernels are "
                  "loaded as PTX, which the CUDA driver compiles (no register or spill counts)",
                  RuntimeWarning, stacklevel=3)
