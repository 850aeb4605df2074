"""Corpus: control flow (for with a step and loop-carried values, while
with a data-dependent trip count, if / else on runtime scalars, nesting,
early return), calls (inlined and noinline, tuple results), the grid
(program_id / num_programs on 3 axes), hints (multiple_of, max_contiguous,
max_constancy, assume), barriers, device_print, device_assert (raising on
the CPU), inline assembly (GPU only) and tl.map_elementwise."""
import numpy as np

import ctriton as triton
import ctriton.language as tl
from corpus import add

BLOCK = 32


@triton.jit
def for_kernel(x_ptr, o_ptr, s_ptr, n, STEP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    acc = tl.zeros((BLOCK,), tl.int32)
    total = 0
    for i in range(1, n, STEP):                  # runtime bounds, a step
        acc += x * i
        total += i
    for j in tl.static_range(3):                 # unrolled at compile time
        acc += j
    for k in tl.range(0, n, 4):
        total += k
    tl.store(o_ptr + offs, acc)
    tl.store(s_ptr, total)


def _for_ref(a):
    n = a[3]
    it = list(range(1, n, 3))
    return {1: (a[0] * sum(it) + 3).astype(np.int32), 2: np.array([sum(it) + sum(range(0, n, 4))], np.int32)}


add("for-step-carried", for_kernel,
    lambda rng: [rng.integers(-10, 10, BLOCK).astype(np.int32), np.zeros(BLOCK, np.int32),
                 np.zeros(1, np.int32), 17],
    _for_ref, ["for", "yield"], cx=dict(STEP=3, BLOCK=BLOCK))


@triton.jit
def while_kernel(x_ptr, steps_ptr, v_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    steps = 0
    v = tl.zeros((BLOCK,), tl.int64)
    while x != 1:                                # Collatz: a data-dependent trip count
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
        v += tl.arange(0, BLOCK).to(tl.int64) * x
    tl.store(steps_ptr + pid, steps)
    tl.store(v_ptr + pid * BLOCK + tl.arange(0, BLOCK), v)


def _collatz(x):
    s, tot = 0, 0
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        s += 1
        tot += x
    return s, tot


def _while_ref(a):
    res = [_collatz(int(x)) for x in a[0]]
    return {1: np.array([r[0] for r in res], np.int32),
            2: np.concatenate([np.arange(BLOCK, dtype=np.int64) * r[1] for r in res])}


add("while-data-dependent", while_kernel,
    lambda rng: [np.array([1, 2, 3, 7, 27, 97, 12, 5], np.int32), np.zeros(8, np.int32),
                 np.zeros(8 * BLOCK, np.int64)],
    _while_ref, ["while", "condition", "if", "yield"], cx=dict(BLOCK=BLOCK), grid=(8,))


@triton.jit
def if_kernel(x_ptr, o_ptr, mode, thresh, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if mode == 0:
        y = x * 2.0
    elif mode == 1:
        y = x - 1.0
    else:
        y = -x
    s = tl.sum(x, 0)
    if s > thresh:                               # a condition computed in the kernel
        y = y + 100.0
    tl.store(o_ptr + offs, y)


def _if_ref(a):
    x, mode, th = a[0].reshape(4, BLOCK), a[2], a[3]
    y = {0: x * 2, 1: x - 1}.get(mode, -x)
    y = np.where(x.sum(1, keepdims=True) > th, y + 100, y)
    return {1: y.reshape(-1).astype(np.float32)}


for mode in (0, 1, 2):
    add(f"if-else-runtime-mode{mode}", if_kernel,
        lambda rng, mode=mode: [rng.uniform(-1, 1, 4 * BLOCK).astype(np.float32), np.zeros(4 * BLOCK, np.float32),
                                mode, 0.25],
        _if_ref, ["if", "yield"], cx=dict(BLOCK=BLOCK), grid=(4,), tol=(1e-6, 1e-6))


@triton.jit
def early_return_kernel(x_ptr, o_ptr, limit, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= limit:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs) + 1)


add("early-return", early_return_kernel,
    lambda rng: [rng.integers(0, 100, 6 * BLOCK).astype(np.int32), np.full(6 * BLOCK, -7, np.int32), 4],
    lambda a: {1: np.where(np.arange(6 * BLOCK) < 4 * BLOCK, a[0] + 1, -7).astype(np.int32)},
    ["return"], cx=dict(BLOCK=BLOCK), grid=(6,))


@triton.jit
def nested_kernel(o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.int32)
    for i in range(n):
        for j in range(i):
            if (i + j) % 3 == 0:
                acc += offs
            else:
                acc -= 1
    tl.store(o_ptr + offs, acc)


def _nested_ref(a):
    n, acc = a[1], np.zeros(BLOCK, np.int64)
    for i in range(n):
        for j in range(i):
            acc = acc + np.arange(BLOCK) if (i + j) % 3 == 0 else acc - 1
    return {0: acc.astype(np.int32)}


add("for-nested-if", nested_kernel, lambda rng: [np.zeros(BLOCK, np.int32), 9], _nested_ref,
    ["for", "if", "yield"], cx=dict(BLOCK=BLOCK))


# -- calls -------------------------------------------------------------------------------------------

@triton.jit
def _inlined(x, k):
    return x * k + 1


@triton.jit(noinline=True)
def _noinline_scale(x, y):
    return x * 3 - y


@triton.jit(noinline=True)
def _noinline_pair(x):
    return x + 1, x - 1


@triton.jit
def call_kernel(x_ptr, y_ptr, o_ptr, p_ptr, q_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(o_ptr + offs, _noinline_scale(_inlined(x, 2.0), y))
    a, b = _noinline_pair(x)
    tl.store(p_ptr + offs, a * b)
    tl.store(q_ptr + offs, _noinline_scale(y, x))        # a second call of the same callee


@triton.jit
def scalar_call_kernel(x_ptr, o_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    a, b = _noinline_pair(_noinline_scale(x, 1.5))
    tl.store(o_ptr + pid, a * b)


@triton.jit
def inlined_call_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, _inlined(_inlined(tl.load(x_ptr + offs), 3.0), -1.0))


_CALL_PTX = {b: [".func ", "call.uni"] for b in ("sm80", "sm90")}  # a device function, really called
add("call-noinline-block-args", call_kernel,
    lambda rng: [rng.uniform(-1, 1, BLOCK).astype(np.float32), rng.uniform(-1, 1, BLOCK).astype(np.float32)]
    + [np.zeros(BLOCK, np.float32) for _ in range(3)],
    lambda a: {2: (a[0] * 2 + 1) * 3 - a[1], 3: (a[0] + 1) * (a[0] - 1), 4: a[1] * 3 - a[0]},
    ["call", "return"], cx=dict(BLOCK=BLOCK), tol=(1e-6, 1e-6), ptx=_CALL_PTX)
add("call-noinline-scalar-args", scalar_call_kernel,
    lambda rng: [rng.uniform(-1, 1, 8).astype(np.float32), np.zeros(8, np.float32)],
    lambda a: {1: (a[0] * 3 - 1.5 + 1) * (a[0] * 3 - 1.5 - 1)},
    ["call", "return"], grid=(8,), tol=(1e-6, 1e-6), ptx=_CALL_PTX)
add("call-inlined", inlined_call_kernel,
    lambda rng: [rng.uniform(-1, 1, BLOCK).astype(np.float32), np.zeros(BLOCK, np.float32)],
    lambda a: {1: (a[0] * 3 + 1) * -1 + 1}, ["mul", "add", "return"], cx=dict(BLOCK=BLOCK), tol=(1e-6, 1e-6))


@triton.jit
def _doubled_if_positive(x):
    if x > 0:
        return x * 2  # falling off the end: poison


@triton.jit(noinline=True)
def _noinline_doubled_if_positive(x):
    if x > 0:
        return x * 2, x + 1


@triton.jit
def poison_return_kernel(x_ptr, o_ptr, p_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(o_ptr + pid, tl.where(x > 0, _doubled_if_positive(x), -1))  # poison never chosen
    a, b = _noinline_doubled_if_positive(x)
    tl.store(p_ptr + pid, tl.where(x > 0, a + b, -1))


add("return-poison-fallthrough", poison_return_kernel,
    lambda rng: [rng.integers(-50, 50, 16).astype(np.int32), np.zeros(16, np.int32), np.zeros(16, np.int32)],
    lambda a: {1: np.where(a[0] > 0, a[0] * 2, -1).astype(np.int32),
               2: np.where(a[0] > 0, a[0] * 3 + 1, -1).astype(np.int32)},
    ["poison", "if", "call", "return"], grid=(16,))


# -- the grid ---------------------------------------------------------------------------------------

@triton.jit
def grid_kernel(o_ptr):
    p0 = tl.program_id(0)
    p1 = tl.program_id(1)
    p2 = tl.program_id(2)
    n0 = tl.num_programs(0)
    n1 = tl.num_programs(1)
    n2 = tl.num_programs(2)
    lin = (p2 * n1 + p1) * n0 + p0
    r = tl.arange(0, 8)
    v = tl.where(r == 0, p0, tl.where(r == 1, p1, tl.where(r == 2, p2, tl.where(
        r == 3, n0, tl.where(r == 4, n1, tl.where(r == 5, n2, lin))))))
    tl.store(o_ptr + lin * 8 + r, v)


def _grid_ref(a):
    out = np.zeros((4, 3, 2, 8), np.int32)        # [p2, p1, p0]
    for p2 in range(4):
        for p1 in range(3):
            for p0 in range(2):
                lin = (p2 * 3 + p1) * 2 + p0
                out[p2, p1, p0] = [p0, p1, p2, 2, 3, 4, lin, lin]
    return {0: out.reshape(-1)}


add("program_id-num_programs-3d", grid_kernel, lambda rng: [np.zeros(24 * 8, np.int32)], _grid_ref,
    ["program_id", "num_programs"], grid=(2, 3, 4))


# -- hints, barrier ----------------------------------------------------------------------------------

@triton.jit
def hints_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.assume(n > 0)
    tl.assume(pid >= 0)
    start = tl.multiple_of(pid * BLOCK, 16)
    offs = tl.max_contiguous(start + tl.arange(0, BLOCK), 16)
    rows = tl.max_constancy(offs // 8, 8)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(o_ptr + offs, x + rows.to(tl.float32), mask=offs < n)


add("hints-assume", hints_kernel,
    lambda rng: [rng.uniform(-1, 1, 100).astype(np.float32), np.zeros(100, np.float32), 100],
    lambda a: {1: (a[0] + np.arange(100) // 8).astype(np.float32)},
    ["multiple_of", "max_contiguous", "max_constancy", "assume"],
    cx=dict(BLOCK=64), grid=(2,))


@triton.jit
def barrier_kernel(x_ptr, scratch_ptr, o_ptr, BLOCK: tl.constexpr):
    # each element written by one thread is read back by another: the
    # barrier orders the two within the program
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = pid * BLOCK
    tl.store(scratch_ptr + base + offs, tl.load(x_ptr + base + offs) * 2)
    tl.debug_barrier()
    tl.store(o_ptr + base + offs, tl.load(scratch_ptr + base + BLOCK - 1 - offs))


add("barrier", barrier_kernel,
    lambda rng: [rng.integers(-100, 100, 4 * 128).astype(np.int32), np.zeros(4 * 128, np.int32),
                 np.zeros(4 * 128, np.int32)],
    lambda a: {2: (a[0].reshape(4, 128)[:, ::-1] * 2).reshape(-1).astype(np.int32)},
    ["barrier"], cx=dict(BLOCK=128), grid=(4,))


@triton.jit
def gdc_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    # programmatic dependent launch: wait for the grids this one depends on,
    # then let dependents start (no-ops without a PDL launch, and before sm_90)
    tl.extra.cuda.gdc_wait()
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.extra.cuda.gdc_launch_dependents()
    tl.store(o_ptr + offs, x + 1)


add("griddepcontrol", gdc_kernel,
    lambda rng: [rng.integers(-100, 100, 128).astype(np.int32), np.zeros(128, np.int32)],
    lambda a: {1: (a[0] + 1).astype(np.int32)},
    ["griddepcontrol"], cx=dict(BLOCK=128),
    ptx={"sm90": ["griddepcontrol.wait", "griddepcontrol.launch_dependents"]})


# -- debugging -----------------------------------------------------------------------------------------

@triton.jit
def print_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("corpus x: ", x)
    tl.device_print("corpus pid", tl.program_id(0), hex=True)
    tl.store(o_ptr + tl.arange(0, BLOCK), x + 1)


add("device_print", print_kernel, lambda rng: [np.arange(4, dtype=np.int32) * 11, np.zeros(4, np.int32)],
    lambda a: {1: a[0] + 1}, ["print"], cx=dict(BLOCK=4), stdout=["corpus x: ", "corpus pid", "33"])


@triton.jit(debug=True)
def assert_kernel(x_ptr, o_ptr, limit, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x < limit, "corpus: x must stay below the limit")
    tl.store(o_ptr + tl.arange(0, BLOCK), x * 3)


def _bad_limit(args):
    args[2] = 5                     # x = 0..15 breaks the assertion
    return args


add("device_assert", assert_kernel,
    lambda rng: [np.arange(16, dtype=np.int32), np.zeros(16, np.int32), 100],
    lambda a: {1: a[0] * 3}, ["assert"], cx=dict(BLOCK=16),
    raises=(_bad_limit, "corpus: x must stay below the limit"))


@triton.jit
def inline_asm_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(o_ptr + tl.arange(0, BLOCK), y)


_ASM_CPU = {"cpu": "inline PTX runs on NVIDIA GPUs only (the CPU backend raises a CompilationError)"}
add("inline_asm_elementwise", inline_asm_kernel,
    lambda rng: [np.arange(64, dtype=np.int32), np.zeros(64, np.int32)],
    lambda a: {1: a[0] * 8}, ["elementwise_inline_asm"], cx=dict(BLOCK=64),
    ptx={b: ["shl.b32 %r", ", 3;"] for b in ("sm80", "sm90")}, skip=_ASM_CPU)


@triton.jit
def inline_asm_pack4_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    # four 8-bit elements per 32-bit register, shifted together
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r", [x],
                                  dtype=tl.int8, is_pure=True, pack=4)
    tl.store(o_ptr + tl.arange(0, BLOCK), y)


add("inline_asm_elementwise-pack4-int8", inline_asm_pack4_kernel,
    lambda rng: [rng.integers(0, 256, 512).astype(np.uint8), np.zeros(512, np.uint8)],
    lambda a: {1: (a[0] << 3).astype(np.uint8)}, ["elementwise_inline_asm"], cx=dict(BLOCK=512),
    ptx={b: ["0x1F1F1F1F", "shl.b32"] for b in ("sm80", "sm90")}, skip=_ASM_CPU)


@triton.jit
def inline_asm_multi_kernel(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
    # two results per element, four elements per invocation: the uint8
    # operand packed four to a register, the fp32 one four registers
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c, d = tl.inline_asm_elementwise(
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
        constraints="=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r", args=[a, b], dtype=(tl.int32, tl.float32),
        is_pure=True, pack=4)
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)


add("inline_asm_elementwise-multiple-outputs-pack4", inline_asm_multi_kernel,
    lambda rng: [rng.integers(0, 256, 512).astype(np.uint8), rng.standard_normal(512).astype(np.float32) * 200,
                 np.zeros(512, np.int32), np.zeros(512, np.float32)],
    lambda a: {2: a[0].astype(np.int32), 3: np.maximum(a[0].astype(np.float32), a[1])},
    ["elementwise_inline_asm"], cx=dict(BLOCK=512),
    ptx={b: ["mov.b32 {tmp0, tmp1, tmp2, tmp3}, %r", "max.f32"] for b in ("sm80", "sm90")}, skip=_ASM_CPU)


@triton.jit
def inline_asm_ptr_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # pointer operands ("l"); not pure, so it stays although its result is unused
    tl.inline_asm_elementwise("ld.global.b8 $0, [$1]; shl.b32 $0, $0, 3; st.global.b8 [$2], $0;", "=r,l,l",
                              [x_ptr + tl.arange(0, BLOCK), y_ptr + tl.arange(0, BLOCK)], dtype=tl.int8,
                              is_pure=False, pack=1)


add("inline_asm_elementwise-pointers", inline_asm_ptr_kernel,
    lambda rng: [rng.integers(0, 256, 512).astype(np.uint8), np.zeros(512, np.uint8)],
    lambda a: {1: (a[0] << 3).astype(np.uint8)}, ["elementwise_inline_asm"], cx=dict(BLOCK=512),
    ptx={b: ["st.global.b8 [%rd"] for b in ("sm80", "sm90")}, skip=_ASM_CPU)


@triton.jit
def _sign_of_difference(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def map_elementwise_kernel(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
    # a branch per element: tl.map_elementwise runs the scalar function on each
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.map_elementwise(_sign_of_difference, tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


add("map_elementwise", map_elementwise_kernel,
    lambda rng: [rng.integers(-3, 3, 128).astype(np.int32), rng.integers(-3, 3, 128).astype(np.int32),
                 np.zeros(128, np.int32)],
    lambda a: {2: np.sign(a[0] - a[1]).astype(np.int32)}, ["map_elementwise"], cx=dict(BLOCK=128))


@triton.jit
def _divmod_pair(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def map_elementwise_pack_kernel(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
    # two elements per call, two results
    offs = tl.arange(0, BLOCK)
    c, d = tl.map_elementwise(_divmod_pair, tl.load(a_ptr + offs), tl.load(b_ptr + offs), pack=2)
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)


add("map_elementwise-pack2-multiple-outputs", map_elementwise_pack_kernel,
    lambda rng: [rng.integers(0, 1 << 30, 512).astype(np.uint32), rng.integers(1, 1000, 512).astype(np.uint32),
                 np.zeros(512, np.uint32), np.zeros(512, np.uint32)],
    lambda a: {2: a[0] // a[1], 3: a[0] % a[1]}, ["map_elementwise"], cx=dict(BLOCK=512))
