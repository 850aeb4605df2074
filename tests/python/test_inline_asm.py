"""tl.inline_asm_elementwise without a GPU: the kernels of Triton's
test_inline_asm* compiled for sm_80 and sm_90, their PTX assembled by ptxas,
and the asm's registers traced back through the PTX (its inputs loaded from
the right arguments, its outputs stored to the right ones, 8-bit elements
four to a register); purity (a pure asm is CSE'd / DCE'd, a non-pure one
never); the frontend's checks; the CPU backend's error. The same kernels
run on the GPU in test_inline_asm_gpu.py."""
import os
import re
import shutil

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from ctriton.compiler.errors import CompilationError
from cpu_util import cpu_driver  # noqa: F401

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))


@triton.jit
def shf_kernel(X, Y, Z, n: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    s = tl.full([BLOCK], n, tl.int32)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, y, s], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(Z + tl.arange(0, BLOCK), z)


@triton.jit
def shl_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(Y + tl.arange(0, BLOCK), y)


@triton.jit
def packed_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    # shift 4x8bits values together.
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; \
                                   shl.b32 $0, $0, 3;", "=r,r", [x], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(Y + tl.arange(0, BLOCK), y)


@triton.jit
def pointers_kernel(X, Y, BLOCK: tl.constexpr):
    x_ptrs = X + tl.arange(0, BLOCK)
    y_ptrs = Y + tl.arange(0, BLOCK)
    tl.inline_asm_elementwise("ld.global.b8 $0, [$1]; \
                               shl.b32 $0, $0, 3; \
                               st.global.b8 [$2], $0;", "=r,l,l", [x_ptrs, y_ptrs], dtype=tl.int8,
                              is_pure=False, pack=1)


@triton.jit
def multi_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    (c, d) = tl.inline_asm_elementwise(
        asm="""
        sub.u32 $0, $2, $3;  // C = A - B
        sub.u32 $1, $3, $2;  // D = B - A
        """,
        constraints=("=r,=r,"
                     "r,r"),
        args=[a, b], dtype=(tl.uint32, tl.uint32), is_pure=True, pack=1)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@triton.jit
def packed_multi_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    (c, d) = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints=("=r,=r,=r,=r,=r,=r,=r,=r,"
                     "r,r,r,r,r"),
        args=[a, b], dtype=(tl.int32, tl.float32), is_pure=True, pack=4)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@triton.jit
def scalar_kernel(X, Y, BLOCK: tl.constexpr):
    # a Python scalar and a scalar tensor broadcast against a block; no inputs at all
    pid = tl.program_id(0)
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("mad.lo.s32 $0, $1, $2, $3;", "=r,r,r,r", [x, 5, pid], dtype=tl.int32,
                                  is_pure=True, pack=1)
    t = tl.inline_asm_elementwise("mov.u32 $0, %clock;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
    tl.store(Y + tl.arange(0, BLOCK), y)
    tl.store(Y + BLOCK, t)


@triton.jit
def purity_kernel(X, Y, PURE: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    # unused: dropped when pure
    tl.inline_asm_elementwise("not.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=PURE, pack=1)
    # twice the same: merged when pure
    a = tl.inline_asm_elementwise("brev.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=PURE, pack=1)
    b = tl.inline_asm_elementwise("brev.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=PURE, pack=1)
    tl.store(Y + tl.arange(0, BLOCK), a + b)


def _sig(fn, **types):
    return {k: types.get(k, "constexpr") for k in fn.arg_names}


def _compile(fn, sig, cx, arch, opts=None):
    return triton.compile(ASTSource(fn, sig, cx), target=GPUTarget("cuda", arch, 32), options=opts or {})


# ---- a small PTX def-use tracer -------------------------------------------------

_INSTR = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.]*)\s+(.*?);\s*(?://.*)?$")
_REG = re.compile(r"%[a-z]+\d+")


class Ptx:
    """The kernel body's instructions: who defines each register from what,
    the params loaded, the global stores and the inline-asm lines."""

    def __init__(self, text):
        self.defs, self.param, self.stores, self.asm = {}, {}, [], []
        in_asm = False
        for line in text.splitlines():
            if "begin inline asm" in line:
                in_asm = True
                continue
            if "end inline asm" in line:
                in_asm = False
                continue
            for part in line.split(";"):
                m = _INSTR.match(part + ";")
                if not m:
                    continue
                op, rest = m.group(1), m.group(2)
                if in_asm:
                    self.asm.append((op, rest))
                    continue
                if op.startswith("st."):
                    addr, val = rest.split("]", 1)
                    self.stores.append((op, _REG.findall(addr), _REG.findall(val)))
                    continue
                regs = _REG.findall(rest)
                if not regs:
                    continue
                dest = regs[0]
                if op.startswith("ld.param"):
                    self.param[dest] = re.search(r"\[(\w+)\]", rest).group(1)
                self.defs[dest] = (op, regs[1:])

    def ancestors(self, reg):
        seen, todo = set(), [reg]
        while todo:
            r = todo.pop()
            if r in seen:
                continue
            seen.add(r)
            todo.extend(self.defs.get(r, ("", []))[1])
        return seen

    def params_of(self, reg):
        return {self.param[r].rsplit("_param_", 1)[1] for r in self.ancestors(reg) if r in self.param}

    def loaded_from(self, reg):
        """Params whose global loads feed reg."""
        out = set()
        for r in self.ancestors(reg):
            op, srcs = self.defs.get(r, ("", []))
            if op.startswith("ld.global"):
                for s in srcs:
                    out |= self.params_of(s)
        return out

    def stores_of(self, reg):
        """(param index, op) of the global stores whose value derives from reg."""
        return [(p, op) for op, addr, val in self.stores for v in val if reg in self.ancestors(v)
                for p in set().union(*(self.params_of(a) for a in addr))]

    def asm_regs(self, opcode):
        return [_REG.findall(rest) for op, rest in self.asm if op == opcode]


ARCHS = [80, 90]


@pytest.mark.parametrize("arch", ARCHS)
def test_shl_wiring(arch):
    k = _compile(shl_kernel, _sig(shl_kernel, X="*i32", Y="*i32"), dict(BLOCK=128), arch)
    ptx = Ptx(k.asm["ptx"])
    (out, inp), = ptx.asm_regs("shl.b32")
    assert ptx.loaded_from(inp) == {"0"}
    assert {p for p, _ in ptx.stores_of(out)} == {"1"}
    assert "elementwise_inline_asm" in k.asm["ct.ttgir"]


@pytest.mark.parametrize("arch", ARCHS)
def test_shf_three_operands(arch):
    k = _compile(shf_kernel, _sig(shf_kernel, X="*u32", Y="*u32", Z="*u32"), dict(n=17, BLOCK=128), arch)
    ptx = Ptx(k.asm["ptx"])
    (out, a, b, s), = ptx.asm_regs("shf.l.wrap.b32")
    assert ptx.loaded_from(a) == {"0"} and ptx.loaded_from(b) == {"1"}
    assert {p for p, _ in ptx.stores_of(out)} == {"2"}


@pytest.mark.parametrize("arch", ARCHS)
def test_multiple_outputs_wiring(arch):
    k = _compile(multi_kernel, _sig(multi_kernel, A="*u32", B="*u32", C="*u32", D="*u32"), dict(BLOCK=128), arch)
    ptx = Ptx(k.asm["ptx"])
    (c, a, b), (d, b2, a2) = ptx.asm_regs("sub.u32")
    assert (a, b) == (a2, b2)
    assert ptx.loaded_from(a) == {"0"} and ptx.loaded_from(b) == {"1"}
    assert {p for p, _ in ptx.stores_of(c)} == {"2"}
    assert {p for p, _ in ptx.stores_of(d)} == {"3"}


@pytest.mark.parametrize("arch", ARCHS)
def test_packed_int8_four_per_register(arch):
    k = _compile(packed_kernel, _sig(packed_kernel, X="*u8", Y="*u8"), dict(BLOCK=512), arch)
    ptx = Ptx(k.asm["ptx"])
    (out, inp), = ptx.asm_regs("and.b32")
    loads = [r for r in ptx.ancestors(inp) if ptx.defs.get(r, ("",))[0].startswith("ld.global")]
    assert len(loads) == 4 and ptx.loaded_from(inp) == {"0"}   # 4 bytes, one register
    stores = ptx.stores_of(out)
    assert len(stores) == 4 and {p for p, _ in stores} == {"1"}
    assert all(op.endswith(".b8") or op.endswith(".u8") for _, op in stores)


@pytest.mark.parametrize("arch", ARCHS)
def test_packed_multiple_outputs(arch):
    k = _compile(packed_multi_kernel, _sig(packed_multi_kernel, A="*u8", B="*fp32", C="*i32", D="*fp32"),
                 dict(BLOCK=512), arch)
    ptx = Ptx(k.asm["ptx"])
    (packed,), = ptx.asm_regs("mov.b32")
    assert ptx.loaded_from(packed) == {"0"}
    maxes = ptx.asm_regs("max.f32")
    assert len(maxes) == 4
    assert all(ptx.loaded_from(m[2]) == {"1"} for m in maxes)
    assert len({m[2] for m in maxes}) == 4
    cvts = ptx.asm_regs("cvt.u32.u8")
    assert all({p for p, _ in ptx.stores_of(c[0])} >= {"2"} for c in cvts)
    assert all({p for p, _ in ptx.stores_of(m[0])} == {"3"} for m in maxes)


@pytest.mark.parametrize("arch", ARCHS)
def test_pointer_operands_not_pure_kept(arch):
    k = _compile(pointers_kernel, _sig(pointers_kernel, X="*u8", Y="*u8"), dict(BLOCK=512), arch)
    ptx = Ptx(k.asm["ptx"])
    lds = ptx.asm_regs("ld.global.b8")
    sts = ptx.asm_regs("st.global.b8")
    assert len(lds) == 4 and len(sts) == 4       # 4 elements per thread, pack = 1
    assert all(ptx.params_of(r[1]) == {"0"} for r in lds)
    assert all(ptx.params_of(r[0]) == {"1"} for r in sts)


@pytest.mark.parametrize("arch", ARCHS)
def test_scalars_broadcast(arch):
    k = _compile(scalar_kernel, _sig(scalar_kernel, X="*i32", Y="*i32"), dict(BLOCK=128), arch)
    ttir = k.asm["ct.ttir"]
    assert re.search(r"elementwise_inline_asm %\d+, %\d+, %\d+ \{.*\} : block<128xi32>", ttir)
    assert re.search(r"elementwise_inline_asm \{.*pure = false\} : i32", ttir)
    assert "%clock" in k.asm["ptx"] and "mad.lo.s32" in k.asm["ptx"]


@pytest.mark.parametrize("pure", [True, False])
def test_purity(pure):
    k = _compile(purity_kernel, _sig(purity_kernel, X="*i32", Y="*i32"), dict(PURE=pure, BLOCK=128), 90)
    ptx = k.asm["ptx"]
    assert ("not.b32" in ptx) == (not pure)
    assert len(re.findall(r"brev\.b32 %r", ptx)) == (1 if pure else 2)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("fn,types,cx", [
    (shf_kernel, dict(X="*u32", Y="*u32", Z="*u32"), dict(n=17, BLOCK=128)),
    (packed_kernel, dict(X="*u8", Y="*u8"), dict(BLOCK=512)),
    (pointers_kernel, dict(X="*u8", Y="*u8"), dict(BLOCK=512)),
    (multi_kernel, dict(A="*u32", B="*u32", C="*u32", D="*u32"), dict(BLOCK=512)),
    (packed_multi_kernel, dict(A="*u8", B="*fp32", C="*i32", D="*fp32"), dict(BLOCK=512)),
    (scalar_kernel, dict(X="*i32", Y="*i32"), dict(BLOCK=128)),
], ids=["shf", "packed", "pointers", "multi", "packed-multi", "scalars"])
def test_ptxas_accepts(fn, types, cx, arch):
    k = _compile(fn, _sig(fn, **types), cx, arch)
    assert f".target sm_{arch}" in k.asm["ptx"]
    cubin = k.asm.get("cubin")
    assert cubin and cubin[:4] == b"\x7fELF", "ptxas produced no cubin"


# ---- errors -----------------------------------------------------------------------

@triton.jit
def bad_count_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(Y + tl.arange(0, BLOCK), y)


@triton.jit
def bad_count2_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(Y + tl.arange(0, BLOCK), y)


def test_constraint_count_checked():
    # 4 float32 operands do not share a register: "=r,r" is one input short of
    # the four the asm gets with pack = 4
    with pytest.raises(CompilationError, match=r"name 1 outputs and 1 inputs.*1 output and 4 input") as e:
        _compile(bad_count_kernel, _sig(bad_count_kernel, X="*fp32", Y="*i8"), dict(BLOCK=64), 90)
    assert "test_inline_asm.py:" in str(e.value)
    with pytest.raises(CompilationError, match=r"name 1 outputs and 2 inputs"):
        _compile(bad_count2_kernel, _sig(bad_count2_kernel, X="*i32", Y="*i32"), dict(BLOCK=64), 80)


@pytest.mark.usefixtures("cpu_driver")
def test_cpu_backend_rejects_with_location():
    x = np.arange(64, dtype=np.int32)
    y = np.zeros_like(x)
    with pytest.raises(CompilationError, match="inline PTX runs only on NVIDIA GPUs") as e:
        shl_kernel[(1,)](x, y, BLOCK=64)
    line = shl_kernel.fn.__code__.co_firstlineno + 3
    assert f"test_inline_asm.py:{line}:" in str(e.value)
