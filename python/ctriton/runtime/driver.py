"""Drivers: which backend launches kernels, and facts about its device.

``driver.active`` is the CUDA driver when libcuda loads and reports a
device, the CPU driver otherwise; ``CTRITON_BACKEND=cpu|cuda`` forces one and
``driver.set_active(d)`` switches at run time. The GPU is probed (device
count, attributes) and launched on through the C extension.
"""
import os
import sys

from .. import _C
from ..backends.compiler import GPUTarget


def _torch():
    return sys.modules.get("torch")


class _CudaLib:
    """The CUDA driver's device probe, through the extension's loader of
    libcuda (the same library the launches use; no context is made)."""
    # CUdevice_attribute values (cuda.h)
    ATTRS = {
        "max_threads_per_block": 1, "max_shared_mem_per_block": 8, "warpSize": 10,
        "clock_rate": 13, "multiprocessor_count": 16, "mem_clock_rate": 36,
        "mem_bus_width": 37, "max_threads_per_sm": 39, "cc_major": 75, "cc_minor": 76,
        "max_shared_mem": 97, "max_num_regs": 82,
    }

    def __init__(self):
        self.count = _C.cuda_probe()  # OSError without a usable driver
        if self.count == 0:
            raise OSError("no CUDA device")

    def attr(self, name, dev):
        return _C.cuda_attribute(dev, self.ATTRS[name])


# The CPU as a GPU-like device for programs that size their grids from
# occupancy (upstream tutorial 02: registers and shared memory per SM over
# what one program uses): each core ("SM") runs one program at a time, so a
# CPU kernel reports the whole core's registers (over its num_warps
# "threads", warpSize 1) and shared memory as its use, and such a program
# launches one program per core.
CPU_SHARED_MEM = 1 << 20
CPU_NUM_REGS = 1 << 16


def _complete_torch_cpu(torch):
    """Programs written for a GPU run on the CPU backend with
    DEVICE = driver.active.get_active_torch_device() and then call
    getattr(torch, DEVICE.type).<stream API>, as they would torch.cuda's
    (upstream tutorial 02 benchmarks under set_stream). torch.cpu has
    Stream and current_stream but no set_stream: the CPU has one stream, so
    setting it changes nothing."""
    cpu = getattr(torch, "cpu", None)
    if cpu is not None and not hasattr(cpu, "set_stream"):
        cpu.set_stream = _cpu_set_stream


def _cpu_set_stream(stream):
    return None


class CpuUtils:
    def get_device_properties(self, device=0):
        n = os.cpu_count() or 1
        return {"multiprocessor_count": n, "max_shared_mem": CPU_SHARED_MEM, "max_num_regs": CPU_NUM_REGS,
                "warpSize": 1, "max_threads_per_sm": 1, "name": "cpu"}


class CpuDriver:
    """Runs kernels on the host through the CPU backend."""
    backend = "cpu"

    def __init__(self):
        self.utils = CpuUtils()

    @staticmethod
    def is_active():
        return True

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_device_count(self):
        return 1

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self, device=None):
        return GPUTarget("cpu", 0, 1)

    def get_active_torch_device(self):
        t = _torch()
        if t is None:
            return "cpu"
        _complete_torch_cpu(t)
        return t.device("cpu")

    def get_device_interface(self):
        return None

    def get_benchmarker(self):
        from ..testing import do_bench
        return do_bench

    def _activate(self):
        _C.set_backend(_C.BACKEND_CPU, None)

    def __repr__(self):
        return "CpuDriver()"


class CudaUtils:
    def __init__(self, lib):
        self._lib = lib

    def get_device_properties(self, device=0):
        a = lambda k: self._lib.attr(k, device)  # noqa: E731
        return {"multiprocessor_count": a("multiprocessor_count"),
                "max_shared_mem": a("max_shared_mem"), "max_num_regs": a("max_num_regs"),
                "warpSize": a("warpSize"), "max_threads_per_sm": a("max_threads_per_sm"),
                "sm_clock_rate": a("clock_rate"), "mem_clock_rate": a("mem_clock_rate"),
                "mem_bus_width": a("mem_bus_width")}


class CudaDriver:
    """Runs kernels on an NVIDIA GPU through the CUDA driver API."""
    backend = "cuda"

    def __init__(self):
        self._lib = _CudaLib()
        self.utils = CudaUtils(self._lib)

    @staticmethod
    def is_active():
        try:
            _CudaLib()
            return True
        except OSError:
            return False

    def get_current_device(self):
        """torch's current device once torch has initialised CUDA, else the
        device of this thread's current CUDA context, else 0. (A launch runs
        on the device of its tensors; this one is for launches with none.)"""
        t = _torch()
        if t is not None and t.cuda.is_initialized():
            return t.cuda.current_device()
        d = _C.cuda_context_device()
        return d if d >= 0 else 0

    def set_current_device(self, device):
        """torch.cuda.set_device with torch, else the device's primary
        context made current on this thread (what cudaSetDevice does)."""
        t = _torch()
        if t is not None:
            t.cuda.set_device(device)
        else:
            _C.cuda_set_device(device)

    def get_device_count(self):
        return self._lib.count

    def get_current_stream(self, device=None):
        t = _torch()
        if t is None:
            return 0
        if device is None:
            device = t.cuda.current_device()
        return t.cuda.current_stream(device).cuda_stream

    def get_current_target(self, device=None):
        dev = self.get_current_device() if device is None else device
        major, minor = self._lib.attr("cc_major", dev), self._lib.attr("cc_minor", dev)
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_active_torch_device(self):
        t = _torch()
        if t is None:
            import torch as t
        return t.device("cuda", self.get_current_device())

    def get_device_interface(self):
        t = _torch()
        return t.cuda if t else None

    def get_benchmarker(self):
        from ..testing import do_bench
        return do_bench

    def _activate(self):
        # No stream getter: the launch path reads torch's current stream
        # itself once torch is imported (the default stream before).
        _C.set_backend(_C.BACKEND_CUDA, None)

    def __repr__(self):
        return "CudaDriver()"


def _default_driver():
    want = os.environ.get("CTRITON_BACKEND", "").lower()
    if want == "cpu":
        return CpuDriver()
    if want == "cuda":
        return CudaDriver()  # raises a clear OSError when there is no GPU
    if want:
        raise ValueError(f"CTRITON_BACKEND={want!r}: expected 'cpu' or 'cuda'")
    if CudaDriver.is_active():
        return CudaDriver()
    return CpuDriver()


class DriverConfig:
    """``driver.active`` (created on first use), ``set_active``, ``reset_active``."""

    def __init__(self):
        self._default = None
        self._active = None

    @property
    def default(self):
        if self._default is None:
            self._default = _default_driver()
        return self._default

    @property
    def active(self):
        if self._active is None:
            self.set_active(self.default)
        return self._active

    def set_active(self, d):
        if isinstance(d, str):
            d = {"cpu": CpuDriver, "cuda": CudaDriver}[d]()
        d._activate()
        self._active = d

    def reset_active(self):
        self._active = None
        self.set_active(self.default)


driver = DriverConfig()


def max_shared_mem(device=None):
    """Shared memory per block (bytes) of a device of the active driver."""
    d = driver.active
    if device is None:
        device = d.get_current_device()
    return d.utils.get_device_properties(device)["max_shared_mem"]
