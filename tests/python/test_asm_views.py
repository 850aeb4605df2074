"""CompiledKernel.asm["ttir"] and ["ttgir"] in Triton's MLIR spelling (the
TTIR a bare `module {`, the TTGIR with its layouts as #ttg aliases), and
["ct.ttir"] / ["ct.ttgir"], the same IR in ctriton's textual form, which
parses back. Compiled for both targets without a GPU."""
import re

import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

TARGETS = {"cpu": GPUTarget("cpu", 0, 1), "sm80": GPUTarget("cuda", 80, 32),
           "sm90": GPUTarget("cuda", 90, 32)}


def compile_for(fn, sig, cx=None, target="cpu", attrs=None, **opts):
    return triton.compile(ASTSource(fn, sig, cx or {}, attrs), target=TARGETS[target], options=opts)


@triton.jit
def store_f64(out_ptr):
    tl.store(out_ptr, 1e50)


@triton.jit
def store_i64(out_ptr):
    tl.store(out_ptr, 2**40)


@triton.jit
def store_nan(out_ptr):
    tl.store(out_ptr, float("nan"))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_ttir_constants_and_header(target):
    t = compile_for(store_f64, {"out_ptr": "*fp64"}, target=target).asm["ttir"]
    assert t.startswith("module {\n  tt.func public @store_f64(")
    assert re.search(r"arith\.constant 1\.000000e\+50 : f64", t), t
    assert re.search(r"tt\.store %0, %\d+ : !tt\.ptr<f64>", t), t
    assert "num_stages" not in t and "num_warps" not in t  # options live in the metadata
    t = compile_for(store_i64, {"out_ptr": "*i64"}, target=target).asm["ttir"]
    assert re.search(r"arith\.constant 1099511627776 : i64", t), t
    t = compile_for(store_nan, {"out_ptr": "*fp32"}, target=target).asm["ttir"]
    assert re.search(r"arith\.constant 0x7FC00000 : f32", t), t


@triton.jit
def range_options(ub, p, STAGES: tl.constexpr, FLAT: tl.constexpr):
    for i in tl.range(0, ub, num_stages=STAGES, flatten=FLAT, disallow_acc_multi_buffer=FLAT):
        tl.store(p + i, i)
    for i in tl.range(0, ub, disable_licm=True):
        tl.store(p + i, i + 1)


@pytest.mark.parametrize("target", ["cpu", "sm90"])
def test_loop_attributes(target):
    sig = {"ub": "i32", "p": "*i32"}
    t = compile_for(range_options, sig, {"STAGES": None, "FLAT": False}, target).asm["ttir"]
    assert t.count("scf.for") == 2
    assert "num_stages" not in t and "tt.flatten" not in t and "disallow_acc_multi_buffer" not in t
    assert "llvm.loop_annotation = #llvm.loop_annotation<licm = #llvm.loop_licm<disable = true" in t
    t = compile_for(range_options, sig, {"STAGES": 2, "FLAT": True}, target).asm["ttir"]
    # flags as unit attributes, numbers typed, after the loop's closing brace
    assert re.search(r"\n    \} \{tt\.disallow_acc_multi_buffer, tt\.flatten, tt\.num_stages = 2 : i32\}\n", t), t
    # ctriton's own text keeps its spelling
    assert "flatten = true" in compile_for(range_options, sig, {"STAGES": 2, "FLAT": True},
                                           target).asm["ct.ttir"]


@triton.jit
def dot_reduce(a, b, c, s, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    tl.assume(n > 0)
    x = tl.load(a + rm[:, None] * BK + rk[None, :])
    y = tl.load(b + rk[:, None] * BN + rn[None, :])
    acc = tl.dot(x, y)
    tl.store(c + rm[:, None] * BN + rn[None, :], acc)
    tl.store(s + rm, tl.sum(acc, axis=1))


DOT_SIG = {"a": "*fp16", "b": "*fp16", "c": "*fp32", "s": "*fp32", "n": "i32"}
DOT_CX = {"BM": 64, "BN": 64, "BK": 32}


@pytest.mark.parametrize("arch,version,instr", [(80, 2, r"\[16, 8\]"), (90, 3, r"\[16, \d+, 16\]")])
def test_gpu_ttgir_layouts(arch, version, instr):
    k = compile_for(dot_reduce, DOT_SIG, DOT_CX, f"sm{arch}",
                    {n: {"divisibility": 16} for n in DOT_SIG if n != "n"})
    t = k.asm["ttgir"]
    head, body = t.split("module attributes {", 1)
    aliases = dict(re.findall(r"^(#\w+) = (.*)$", head, re.M))
    assert head.count("\n") == len(aliases)  # nothing but aliases before the module
    assert re.match(r"#ttg\.blocked<\{sizePerThread = \[\d+(, \d+)*\], threadsPerWarp = \[[\d, ]+\], "
                    r"warpsPerCTA = \[[\d, ]+\], order = \[[\d, ]+\]\}>$", aliases["#blocked"])
    assert aliases["#mma"].startswith(f"#ttg.nvidia_mma<{{versionMajor = {version}, versionMinor = 0, "
                                      f"warpsPerCTA = [")
    assert re.search(rf"instrShape = {instr}\}}>$", aliases["#mma"])
    # every alias the body names is defined, and every one defined is used
    assert set(re.findall(r"#(?:blocked|mma|shared)\d*\b", body)) == set(aliases)
    assert body.startswith('"ttg.num-ctas" = 1 : i32, ct.num_stages = 3 : i32, "ttg.num-warps" = 4 : i32, '
                           f'ttg.target = "cuda:{arch}", "ttg.threads-per-warp" = 32 : i32}} {{\n')
    assert re.search(r"tensor<64x32xf16, #ttg\.dot_op<\{opIdx = 0, parent = #mma, kWidth = \d+\}>>", body)
    assert re.search(r"tt\.dot %\d+, %\d+, %\d+.* -> tensor<64x64xf32, #mma>", body)
    assert re.search(r'"tt\.reduce"\(%\d+\) <\{axis = 1 : i32\}>', body)
    assert re.search(r"tensor<64xf32, #ttg\.slice<\{dim = 1, parent = #(mma|blocked\d*)\}>>", body)
    assert "ttg.convert_layout" in body and "llvm.intr.assume" in body
    # the same module in ctriton's form: layouts inline, native op names
    ct = k.asm["ct.ttgir"]
    assert f"#mma<version = [{version}, 0]" in ct and " = dot " in ct and " = reduce " in ct
    assert "tt." not in ct and "#ttg" not in ct


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_native_text_parses_back(target, tmp_path):
    k = compile_for(dot_reduce, DOT_SIG, DOT_CX, target)
    path = tmp_path / "dot_reduce.ttir"
    path.write_text(k.asm["ct.ttir"])
    k2 = triton.compile(str(path), target=TARGETS[target])
    assert k2.asm["ct.ttir"] == k.asm["ct.ttir"]
    assert k2.asm["ttir"] == k.asm["ttir"] and k2.asm["ttgir"] == k.asm["ttgir"]


def test_cpu_cache_hit_rebuilds_from_the_native_text():
    import numpy as np
    from ctriton.compiler.compiler import CachedAsm
    k = compile_for(store_f64, {"out_ptr": "*fp64"})
    hit = compile_for(store_f64, {"out_ptr": "*fp64"})
    assert isinstance(hit.asm, CachedAsm)
    assert hit.asm["ttir"] == k.asm["ttir"] and hit.asm["ct.ttir"] == k.asm["ct.ttir"]
    x = np.zeros(1, "float64")
    hit[(1, 1, 1)](x)
    assert x[0] == 1e50


@triton.jit
def assume_kernel(out_ptr, N: tl.constexpr, BLOCK_N: tl.constexpr):
    size = N - tl.program_id(0) * BLOCK_N
    tl.assume(size >= BLOCK_N)
    if size >= 128:
        tl.store(out_ptr + tl.program_id(0), size)
    else:
        tl.store(out_ptr + tl.program_id(0), size + 101024)


@pytest.mark.parametrize("target", ["cpu", "sm90"])
def test_assume_reaches_llvm(target):
    """tl.assume: `llvm.intr.assume` in the TTGIR, `llvm.assume` in the LLVM
    IR, where LLVM uses it (the branch it rules out is gone)."""
    k = compile_for(assume_kernel, {"out_ptr": "*fp32", "N": "constexpr", "BLOCK_N": "constexpr"},
                    {"N": 1024, "BLOCK_N": 128}, target=target)
    assert "llvm.intr.assume" in k.asm["ttgir"]
    assert "llvm.assume" in k.asm["llir"]
    assert "101024" not in k.asm["llir"]
