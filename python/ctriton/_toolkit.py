"""Where the CUDA tools come from: ptxas, libdevice and a disassembler.

The ptxas lookup itself is in C (jit_find_ptxas, be_nvptx_libdevice_path):
the first of $CTRITON_PTXAS_PATH, $TRITON_PTXAS_PATH, $CUDA_HOME/bin,
$CUDA_PATH/bin, /usr/local/cuda/bin, the ``nvidia-cuda-nvcc`` pip package's
copy, PATH. Only the pip package needs Python to be found; ``register()``
(run at ``import ctriton``) tells C where it is. Without any ptxas a GPU
kernel's PTX goes to the CUDA driver, which compiles it itself
(``warn_no_ptxas`` says so, once).

The disassembler that ``CompiledKernel.asm["sass"]`` runs (only when it is
asked for: a compile never does) is found the same way: cuobjdump, else
nvdisasm, from $CTRITON_CUOBJDUMP_PATH / $TRITON_CUOBJDUMP_PATH /
$CTRITON_NVDISASM_PATH / $TRITON_NVDISASM_PATH, $CUDA_HOME/bin,
$CUDA_PATH/bin, /usr/local/cuda/bin, the ``nvidia-cuda-cuobjdump`` /
``nvidia-cuda-nvdisasm`` pip packages, beside the ptxas in use, PATH.
cuobjdump -sass runs nvdisasm: the nvdisasm found the same way goes first on
its PATH (CUDA 13's wheels put them in separate packages), and where
cuobjdump still fails, nvdisasm reads the cubin itself.
"""
import importlib.util
import os
import shutil
import warnings

from . import _C

# Where nvidia-cuda-nvcc puts ptxas, under the `nvidia` namespace package:
# CUDA 13 wheels in cu13/, CUDA 12 wheels in cuda_nvcc/.
_PKG_PTXAS = ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas", "cu12/bin/ptxas")
_warned = False


def _pkg_tool(rels):
    """The first of rels (paths under the `nvidia` namespace package) that
    is an executable file, or None."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for root in spec.submodule_search_locations or ():
        for rel in rels:
            p = os.path.join(root, rel)
            if _executable(p):
                return p
    return None


def _executable(p):
    return bool(p) and os.path.isfile(p) and os.access(p, os.X_OK)


def pkg_ptxas():
    """The ptxas of an installed nvidia-cuda-nvcc package, or None."""
    return _pkg_tool(_PKG_PTXAS)


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


# The disassemblers, in the order they are tried, and where their pip
# packages put them (CUDA 13 wheels in cu13/, CUDA 12 ones per tool).
_DISASMS = ("cuobjdump", "nvdisasm")
_PKG_DISASM = {"cuobjdump": ("cu13/bin/cuobjdump", "cuda_cuobjdump/bin/cuobjdump", "cu12/bin/cuobjdump"),
               "nvdisasm": ("cu13/bin/nvdisasm", "cuda_nvdisasm/bin/nvdisasm", "cu12/bin/nvdisasm")}


def disassembler_path():
    """The cuobjdump (or else nvdisasm) that ``asm["sass"]`` runs, or None
    (the lookup order is in this module's docstring)."""
    found = _find_disassembler()
    return found[1] if found else None


def _find_disassembler(only=None):
    """(tool name, path) of the disassembler (of tool `only` when given), or
    None."""
    tools = _DISASMS if only is None else (only,)
    for tool in tools:
        for var in (f"CTRITON_{tool.upper()}_PATH", f"TRITON_{tool.upper()}_PATH"):
            if _executable(os.environ.get(var)):
                return tool, os.environ[var]
    dirs = [os.path.join(os.environ[v], "bin") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    dirs.append("/usr/local/cuda/bin")
    for d in dirs:
        for tool in tools:
            if _executable(os.path.join(d, tool)):
                return tool, os.path.join(d, tool)
    for tool in tools:
        p = _pkg_tool(_PKG_DISASM[tool])
        if p:
            return tool, p
    ptxas = ptxas_path()
    for tool in tools:
        if ptxas and _executable(os.path.join(os.path.dirname(ptxas), tool)):
            return tool, os.path.join(os.path.dirname(ptxas), tool)
    for tool in tools:
        p = shutil.which(tool)
        if p:
            return tool, p
    return None


def sass(cubin):
    """The SASS of a cubin (bytes) as text: ``cuobjdump -sass`` (or
    ``nvdisasm``) output. RuntimeError when no disassembler is found or it
    fails."""
    import subprocess
    import tempfile
    found = _find_disassembler()
    if found is None:
        raise RuntimeError("ctriton: asm['sass'] needs a CUDA disassembler, and none was found: cuobjdump "
                           "or nvdisasm (CTRITON_CUOBJDUMP_PATH, TRITON_CUOBJDUMP_PATH, CTRITON_NVDISASM_PATH, "
                           "TRITON_NVDISASM_PATH, CUDA_HOME, CUDA_PATH, /usr/local/cuda, the "
                           "nvidia-cuda-cuobjdump or nvidia-cuda-nvdisasm package, beside ptxas, PATH)")
    fd, path = tempfile.mkstemp(suffix=".cubin", prefix="ctriton-sass-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        kind, tool = found
        if kind == "cuobjdump":
            # cuobjdump runs nvdisasm for -sass (CUDA 13's pip wheels ship
            # them apart): its folder and nvdisasm's go first on its PATH
            nv = _find_disassembler("nvdisasm")
            env = dict(os.environ)
            env["PATH"] = os.pathsep.join([os.path.dirname(tool)] + ([os.path.dirname(nv[1])] if nv else []) +
                                          [env.get("PATH", "")])
            r = subprocess.run([tool, "-sass", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            if r.returncode != 0 and nv:  # nvdisasm on its own reads the cubin too
                tool = nv[1]
                r = subprocess.run([tool, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        else:
            r = subprocess.run([tool, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        os.remove(path)
    if r.returncode != 0:
        raise RuntimeError(f"ctriton: {tool} failed on the cubin: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout.decode(errors="replace")
