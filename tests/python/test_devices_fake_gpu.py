"""Several GPUs without a GPU: the fake libcuda (fake_libcuda.c) with
FAKE_CUDA_ARCHS giving two or more devices, each with its own primary
context. The fake refuses a module load without a current context, and a
launch or an unload in another context than the module's, so a load on
the wrong device or a launch from the wrong context fails here as on a
real driver; it counts loads, unloads and launches per device. Each case
runs in a child process (the driver is loaded once per process)."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CC = shutil.which("cc") or shutil.which("gcc")
PTXAS = shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas")

pytestmark = pytest.mark.skipif(not PTXAS, reason="ptxas not found")


@pytest.fixture(scope="module")
def fake_cuda(tmp_path_factory):
    if not CC:
        pytest.skip("no C compiler for the fake driver")
    out = str(tmp_path_factory.mktemp("fakecuda") / "libfakecuda.so")
    subprocess.run([CC, "-shared", "-fPIC", "-O2", "-o", out,
                    os.path.join(HERE, "fake_libcuda.c")], check=True)
    return out


PRELUDE = """
import ctypes, gc, json, os, sys, threading, types
import ctriton as triton
import ctriton.language as tl
from ctriton import _C

MAXDEV = 8
class Rec(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_uint64), ("params", ctypes.c_uint64 * 32),
                ("device", ctypes.c_int), ("module", ctypes.c_int)]

class Stats(ctypes.Structure):
    _fields_ = [("ndev", ctypes.c_int), ("loads", ctypes.c_int * MAXDEV),
                ("unloads", ctypes.c_int * MAXDEV), ("live", ctypes.c_int * MAXDEV),
                ("bad_calls", ctypes.c_int), ("retains", ctypes.c_int * MAXDEV),
                ("launches", ctypes.c_int * MAXDEV)]

lib = ctypes.CDLL(os.environ["CTRITON_LIBCUDA_PATH"])
lib.fake_launch.restype = ctypes.POINTER(Rec)
lib.fake_stats.restype = ctypes.POINTER(Stats)
lib.fake_set_nparams(2)

def last():
    r = lib.fake_launch().contents
    return {"count": r.count, "device": r.device, "module": r.module, "stream": r.stream,
            "params": list(r.params[:2])}

def stats():
    s = lib.fake_stats().contents
    n = s.ndev
    return {"loads": list(s.loads[:n]), "unloads": list(s.unloads[:n]),
            "live": list(s.live[:n]), "bad_calls": s.bad_calls,
            "launches": list(s.launches[:n])}

def addr(dev, off=0):
    # the fake's device memory: device d's addresses start at d << 40
    return (dev << 40) + (1 << 20) + off

class Ptr:
    # a duck-typed CUDA tensor: its device is the driver's answer for its address
    is_cuda = True
    dtype = "torch.float32"
    def __init__(self, ptr):
        self.ptr = ptr
    def data_ptr(self):
        return self.ptr

class Dev(Ptr):
    # a torch-like tensor: get_device() names its device (-1: the CPU)
    def __init__(self, ptr, dev):
        super().__init__(ptr)
        self.dev = dev
    def get_device(self):
        return self.dev

@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

@triton.jit
def fill(n, v, BLOCK: tl.constexpr):
    pass

compiles = []
import ctriton.compiler.compiler as _cc
_real_compile = _cc.compile
def _counting_compile(src, target=None, options=None, **kw):
    compiles.append(target.arch)
    return _real_compile(src, target=target, options=options, **kw)
_cc.compile = _counting_compile
"""


def run_child(fake_cuda, body, tmp_path, archs="90,90", env_extra=None):
    env = dict(os.environ, CTRITON_LIBCUDA_PATH=fake_cuda, CTRITON_BACKEND="cuda",
               CTRITON_CACHE_DIR=str(tmp_path / "cache"), FAKE_CUDA_ARCHS=archs)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "..", "..", "python"),
                                         env.get("PYTHONPATH", "")])
    env.update(env_extra or {})
    path = tmp_path / "child.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    p = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_device0_explicitly(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        x, y = Dev(addr(0), 0), Dev(addr(0, 4096), 0)
        copy[(2,)](x, y, 100, BLOCK=64)
        out = {"launch": last(), "stats": stats(), "ctx": _C.cuda_context_device()}
        key = copy.specialization(x, y, 100, BLOCK=64)[0]
        key1 = copy.specialization(Dev(addr(1), 1), Dev(addr(1, 4096), 1), 100, BLOCK=64)[0]
        out["key_dev"] = [key[-2:].hex(), key1[-2:].hex(), key[:-2] == key1[:-2]]
        print(json.dumps(out))
    """, tmp_path)
    assert got["launch"]["device"] == 0 and got["launch"]["count"] == 1
    assert got["stats"]["loads"] == [1, 0] and got["stats"]["bad_calls"] == 0
    assert got["ctx"] == -1  # the thread's context (none) is put back after load and launch
    # the in-memory key ends with the device, little-endian; the rest is the same
    assert got["key_dev"] == ["0000", "0100", True]


def test_device1_loads_and_launches_in_its_context(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        _C.cuda_set_device(0)  # device 0's context current on this thread
        out = {}
        for name, x, y in (("pointer", Ptr(addr(1)), Ptr(addr(1, 4096))),
                           ("get_device", Dev(addr(1, 8192), 1), Dev(addr(1, 12288), 1))):
            copy[(3,)](x, y, 100, BLOCK=64)
            out[name] = {"launch": last(), "stats": stats(), "ctx": _C.cuda_context_device()}
        print(json.dumps(out))
    """, tmp_path)
    for name in ("pointer", "get_device"):
        r = got[name]
        assert r["launch"]["device"] == 1, name
        assert r["launch"]["params"] == [(1 << 40) + (1 << 20) + (8192 if name == "get_device" else 0),
                                         (1 << 40) + (1 << 20) + (12288 if name == "get_device" else 4096)]
        assert r["stats"]["loads"] == [0, 1], name  # loaded once, in device 1's context
        assert r["stats"]["bad_calls"] == 0
        assert r["ctx"] == 0, name  # device 0's context current again after the launch
    assert got["get_device"]["stats"]["launches"] == [0, 2]


def test_same_arch_compiles_once_loads_twice(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        out = {}
        c0 = copy[(1,)](Dev(addr(0), 0), Dev(addr(0, 4096), 0), 10, BLOCK=64)
        m0 = last()["module"]
        c1 = copy[(1,)](Dev(addr(1), 1), Dev(addr(1, 4096), 1), 10, BLOCK=64)
        l1 = last()
        c0b = copy[(1,)](Dev(addr(0), 0), Dev(addr(0, 4096), 0), 10, BLOCK=64)
        m0b = last()["module"]
        loaded = c0._binary.loaded()
        out = {"compiles": compiles, "same": c0 is c1 and c0 is c0b, "stats": stats(),
               "modules": [m0, l1["module"], m0b], "dev1": l1["device"],
               "loaded": sorted(loaded), "distinct": loaded[0] != loaded[1],
               "variants": len(copy.cache)}
        print(json.dumps(out))
    """, tmp_path)
    assert got["compiles"] == [90]  # one compile for both sm_90 devices
    assert got["same"]  # one CompiledKernel, one Binary
    assert got["stats"]["loads"] == [1, 1]  # loaded once per device
    assert got["modules"][0] == got["modules"][2] != got["modules"][1]
    assert got["dev1"] == 1 and got["loaded"] == [0, 1] and got["distinct"]
    assert got["variants"] == 1


def test_different_archs_compile_per_arch(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        c0 = copy[(1,)](Dev(addr(0), 0), Dev(addr(0, 4096), 0), 10, BLOCK=64)
        c1 = copy[(1,)](Dev(addr(1), 1), Dev(addr(1, 4096), 1), 10, BLOCK=64)
        c2 = copy[(1,)](Dev(addr(2), 2), Dev(addr(2, 4096), 2), 10, BLOCK=64)
        out = {"compiles": compiles, "archs": [c.metadata.arch for c in (c0, c1, c2)],
               "hashes": len({c0.hash, c1.hash}), "shared": c0 is c2, "stats": stats(),
               "ptx": [".target sm_90" in c0.asm["ptx"], ".target sm_80" in c1.asm["ptx"]]}
        print(json.dumps(out))
    """, tmp_path, archs="90,80,90")
    assert got["compiles"] == [90, 80]  # device 2 (sm_90) shares device 0's compile
    assert got["archs"] == [90, 80, 90] and got["hashes"] == 2 and got["shared"]
    assert got["ptx"] == [True, True]
    assert got["stats"]["loads"] == [1, 1, 1]


def test_mixed_devices_raise(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        errs = []
        cases = [(Dev(addr(0), 0), Dev(addr(1), 1)),   # get_device
                 (Ptr(addr(1)), Ptr(addr(0))),          # the driver's answer
                 (Dev(addr(0), 0), Ptr(addr(1)))]
        for x, y in cases:
            try:
                copy[(1,)](x, y, 10, BLOCK=64)
                errs.append(None)
            except ValueError as e:
                errs.append(str(e))
        # a CPU tensor among GPU ones
        try:
            copy[(1,)](Dev(addr(0), 0), Dev(0x7f0000001000, -1), 10, BLOCK=64)  # pageable host memory
        except ValueError as e:
            errs.append(str(e))
        # a compiled kernel's own launch (no parameter names)
        ck = copy.warmup(Dev(addr(0), 0), Dev(addr(0, 64), 0), 10, BLOCK=64, grid=(1,))
        try:
            ck[(1, 1, 1)](Dev(addr(1), 1), Dev(addr(0), 0), 10, 64)
        except ValueError as e:
            errs.append(str(e))
        print(json.dumps({"errs": errs, "launches": stats()["launches"]}))
    """, tmp_path)
    e = got["errs"]
    assert e[0] == ("Pointer argument 'y_ptr' (at 1) is on cuda:1 but argument 'x_ptr' (at 0) "
                    "is on cuda:0: the tensors of one launch must be on one device")
    assert "'y_ptr' (at 1) is on cuda:0 but argument 'x_ptr' (at 0) is on cuda:1" in e[1]
    assert "'y_ptr' (at 1) is on cuda:1" in e[2]
    assert "Pointer argument (at 1) cannot be accessed from the GPU" in e[3]
    assert e[4].startswith("Pointer argument (at 1) is on cuda:0 but the argument at 0 is on cuda:1")
    assert got["launches"] == [0, 0]  # nothing ran


def test_current_device_for_scalar_launches(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        out = []
        fill[(1,)](4, 1.0, BLOCK=16)  # no context anywhere: device 0
        out.append(last()["device"])
        _C.cuda_set_device(1)  # as cudaSetDevice(1)
        fill[(1,)](4, 1.0, BLOCK=16)
        out.append(last()["device"])
        out.append(triton.runtime.driver.active.get_current_device())
        triton.runtime.driver.active.set_current_device(0)
        fill[(1,)](4, 1.0, BLOCK=16)
        out.append(last()["device"])
        print(json.dumps({"devices": out, "stats": stats()}))
    """, tmp_path)
    assert got["devices"] == [0, 1, 1, 0]
    assert got["stats"]["loads"] == [1, 1] and got["stats"]["bad_calls"] == 0


FAKE_TORCH = """
# A stand-in for torch's CUDA state (no GPU here): what the launch path reads
# (torch._C._cuda_getDevice, torch._C._cuda_getCurrentRawStream) and
# torch.cuda.set_device / torch.cuda.device.
torch = types.ModuleType("torch")
torch._C = types.SimpleNamespace()
state = {"device": 0}
torch._C._cuda_getDevice = lambda: state["device"]
torch._C._cuda_getCurrentRawStream = lambda d: 1000 + d
class _device:
    def __init__(self, d): self.d = d
    def __enter__(self): self.prev = state["device"]; state["device"] = self.d
    def __exit__(self, *a): state["device"] = self.prev
def _set_device(d): state["device"] = d
torch.cuda = types.SimpleNamespace(set_device=_set_device, device=_device,
                                   current_device=lambda: state["device"],
                                   is_initialized=lambda: True)
sys.modules["torch"] = torch
"""


def test_torch_current_device_and_stream(fake_cuda, tmp_path):
    got = run_child(fake_cuda, FAKE_TORCH + textwrap.dedent("""
        out = []
        fill[(1,)](4, 1.0, BLOCK=16)
        out.append([last()["device"], last()["stream"]])
        torch.cuda.set_device(1)
        fill[(1,)](4, 1.0, BLOCK=16)
        out.append([last()["device"], last()["stream"]])
        with torch.cuda.device(0):
            fill[(1,)](4, 1.0, BLOCK=16)
            out.append([last()["device"], last()["stream"]])
            # tensors on device 1 run there, on torch's stream of device 1
            copy[(1,)](Dev(addr(1), 1), Dev(addr(1, 4096), 1), 10, BLOCK=64)
            out.append([last()["device"], last()["stream"]])
        out.append(triton.runtime.driver.active.get_current_device())
        print(json.dumps(out))
    """), tmp_path)
    assert got == [[0, 1000], [1, 1001], [0, 1000], [1, 1001], 1]


def test_unload_on_kernel_death(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        out = {}
        for d in (0, 1):
            copy[(1,)](Dev(addr(d), d), Dev(addr(d, 4096), d), 10, BLOCK=64)
        copy[(1,)](Dev(addr(1), 1), Dev(addr(1, 4096), 1), 10, BLOCK=32)  # a second variant
        out["before"] = stats()
        _C.cuda_set_device(0)
        copy.clear_cache()
        gc.collect()
        out["after"] = stats()
        out["ctx"] = _C.cuda_context_device()  # put back after each unload
        # a kernel that dies on a thread with no current context
        copy[(1,)](Dev(addr(1), 1), Dev(addr(1, 4096), 1), 10, BLOCK=16)
        ck = copy.cache[0]
        copy.clear_cache()
        box = [ck]
        del ck
        def drop():
            box.clear()
            gc.collect()
            out["thread_ctx"] = _C.cuda_context_device()
        t = threading.Thread(target=drop)
        t.start()
        t.join()
        out["thread"] = stats()
        print(json.dumps(out))
    """, tmp_path)
    assert got["before"]["loads"] == [1, 2] and got["before"]["live"] == [1, 2]
    assert got["after"]["unloads"] == [1, 2] and got["after"]["live"] == [0, 0]
    assert got["after"]["bad_calls"] == 0  # each unloaded with its own context current
    assert got["ctx"] == 0
    assert got["thread"]["unloads"] == [1, 3] and got["thread"]["bad_calls"] == 0
    assert got["thread_ctx"] == -1


def test_no_unload_after_exit_began_or_in_a_fork(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        out = {}
        copy[(1,)](Dev(addr(1), 1), Dev(addr(1, 4096), 1), 10, BLOCK=64)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # a forked child drops its copy: no driver call
            copy.clear_cache()
            gc.collect()
            os.write(w, json.dumps(stats()).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        out["fork"] = json.loads(os.read(r, 4096))
        _C._at_exit()  # what atexit runs when the interpreter exits
        copy.clear_cache()
        gc.collect()
        out["exit"] = stats()
        # kernels still alive when the process ends: a clean exit
        copy[(1,)](Dev(addr(0), 0), Dev(addr(0, 4096), 0), 10, BLOCK=64)
        keep = copy.cache
        print(json.dumps(out))
    """, tmp_path)
    assert got["fork"]["loads"] == [0, 1] and got["fork"]["unloads"] == [0, 0]
    assert got["exit"]["unloads"] == [0, 0] and got["exit"]["live"] == [0, 1]


def test_per_device_load_errors(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        out = []
        lib.fake_set_nparams(1)  # the kernel below has one parameter
        # 200000 bytes of shared memory: within sm_90's opt-in limit, over sm_80's
        b = _C.Binary(_C.BACKEND_CUDA, ("*fp32",), 4, 1, 200000, None, b"image\\0", "k")
        b.launch((1, 1, 1), (Ptr(addr(0)),))
        out.append(sorted(b.loaded()))
        try:
            b.launch((1, 1, 1), (Ptr(addr(1)),))
        except triton.OutOfResources as e:
            out.append(["OutOfResources", str(e)])
        try:
            copy[(1,)](Dev(addr(0), 5), Dev(addr(0), 5), 10, BLOCK=64)
        except ValueError as e:
            out.append(str(e))
        try:
            copy[(1,)](Ptr(7 << 40), Ptr(7 << 40), 10, BLOCK=64)
        except ValueError as e:
            out.append(str(e))
        print(json.dumps(out))
    """, tmp_path, archs="90,80")
    assert got[0] == [0]
    assert got[1][0] == "OutOfResources" and "shared memory" in got[1][1]
    assert "CUDA device 5 does not exist (this process sees 2 devices)" in got[2]
    assert "Pointer argument (at 0) cannot be accessed from the GPU" in got[3]


def test_info_where_the_driver_has_no_device_name(fake_cuda, tmp_path):
    # `ctriton info` on a CUDA machine: the fake driver has no
    # cuDeviceGetName, so the device is named by its ordinal; capability,
    # count and driver version come through the same loader
    env = dict(os.environ, CTRITON_LIBCUDA_PATH=fake_cuda, CTRITON_BACKEND="cuda",
               CTRITON_CACHE_DIR=str(tmp_path / "cache"), FAKE_CUDA_ARCHS="90,80")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "..", "..", "python"),
                                         env.get("PYTHONPATH", "")])
    p = subprocess.run([sys.executable, "-m", "ctriton", "info", "--json"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["backend"] == "cuda", info
    assert info["device"] == "CUDA device 0 (sm_90, device 0 of 2)", info
    assert info["driver"] == "CUDA 13.0", info  # the fake reports 13000
