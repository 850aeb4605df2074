"""A layout conversion in a loop body of a value defined before the loop
moves in front of the loop (remove-converts; CTRITON_HOIST_CONVERTS=0 keeps
it in place), and a carried accumulator fed by a converted dot result
through an elementwise product stays in the dot's layout; an epilogue's
conversion sinks past elementwise ops to a narrower result
(CTRITON_SINK_CONVERTS=0 keeps it). Checked on kernels compiled for sm_90a
(no GPU needed): a row vector loaded once and expanded against a dot result
in the loop, kernels/attention.py's backward pass (its dQ loop's
Di[:, None]) and forward epilogue, a row-normalized f16 store; on the GPU
(marked `gpu`) the first and last kernels' results against torch."""
import os
import re
import sys

import pytest

import ctriton as triton
import ctriton.language as tl

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))


@triton.jit
def rowscale_loop(X, Y, V, O, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * BN + rn[None, :])
    v = tl.load(V + rm)  # once, in the coalesced layout
    acc = tl.zeros((BM, BN), tl.float32)
    for i in range(N):
        y = tl.load(Y + i * BN * BN + rn[:, None] * BN + rn[None, :])
        acc += tl.dot(x, y) * v[:, None]  # v in a slice of the product's layout
    tl.store(O + rm[:, None] * BN + rn[None, :], acc)


def _have_ptxas():
    import shutil
    return bool(os.environ.get("CTRITON_PTXAS_PATH") or os.path.exists("/usr/local/cuda/bin/ptxas") or
                shutil.which("ptxas"))


def _compile(fn, sig, cx, warps, stages):
    """sm_90a; every pointer and integer argument divisible by 16."""
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] not in ("constexpr", "fp32")}
    return triton.compile(ASTSource(fn, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": warps, "num_stages": stages})


def _attn_bwd_d64():
    """kernels/attention.py's attn_bwd at D64 (blocks of 32 / 128): its
    signature and constexprs."""
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "DO": "*fp16", "DQ": "*fp16",
           "DK": "*fp16", "DV": "*fp16", "M": "*fp32", "D": "*fp32", "stride_z": "i32", "stride_h": "i32",
           "stride_tok": "i32", "stride_d": "constexpr", "H": "i32", "N_CTX": "i32"}
    cx = dict(stride_d=1, BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2, HEAD_DIM=64)
    sig.update({k: "constexpr" for k in cx})
    return sig, cx


def _loop_converts(ttgir):
    """(conversions inside loop bodies, conversions outside), by nesting:
    the function body's ops are indented two spaces."""
    inner = outer = 0
    for line in ttgir.splitlines():
        if "= convert_layout " not in line:
            continue
        if len(line) - len(line.lstrip(" ")) > 2:
            inner += 1
        else:
            outer += 1
    return inner, outer


def _slice_converts_in_loops(ttgir):
    return sum(1 for line in ttgir.splitlines()
               if "= convert_layout " in line and ": block<" in line and "#slice" in line
               and len(line) - len(line.lstrip(" ")) > 2)


RS_SIG = {"X": "*fp16", "Y": "*fp16", "V": "*fp32", "O": "*fp32", "N": "i32", "BM": "constexpr", "BN": "constexpr"}


def test_row_vector_conversion_leaves_the_loop(monkeypatch):
    if not _have_ptxas():
        pytest.skip("ptxas not found")
    monkeypatch.setenv("CTRITON_HOIST_CONVERTS", "0")
    k0 = _compile(rowscale_loop, RS_SIG, dict(BM=128, BN=64), 4, 3)
    monkeypatch.setenv("CTRITON_HOIST_CONVERTS", "1")
    k1 = _compile(rowscale_loop, RS_SIG, dict(BM=128, BN=64), 4, 3)
    t0, t1 = k0.asm["ct.ttgir"], k1.asm["ct.ttgir"]
    assert _slice_converts_in_loops(t0) == 1, t0
    assert _slice_converts_in_loops(t1) == 0, t1
    (in0, out0), (in1, out1) = _loop_converts(t0), _loop_converts(t1)
    assert (in1, out1) == (in0 - 1, out0 + 1), ((in0, out0), (in1, out1))
    # the hoisted conversion comes before the loop, after the load it converts
    lines = t1.splitlines()
    conv = next(i for i, l in enumerate(lines) if "= convert_layout " in l and "#slice" in l)
    loop = next(i for i, l in enumerate(lines) if re.match(r"\s*%[\w, %]+ = for ", l))
    assert conv < loop
    # the vector now stays in registers across the loop (8 a thread)
    assert k1.n_spills == 0 and k1.n_regs <= k0.n_regs + 16, (k1.n_regs, k0.n_regs)


@pytest.mark.parametrize("hoist", ["0", "1"])
def test_scaled_accumulator_stays_in_the_mma_layout(hoist, monkeypatch):
    """`acc += tl.dot(x, y) * v[:, None]`: the product of the dot result and
    the expanded vector feeds the carried accumulator. The loop carries it
    in the warpgroup MMA's layout, as the dot result, instead of the
    store's blocked layout (which converted the 128x64 product through
    shared memory in every iteration); one conversion after the loop."""
    if not _have_ptxas():
        pytest.skip("ptxas not found")
    monkeypatch.setenv("CTRITON_HOIST_CONVERTS", hoist)
    k = _compile(rowscale_loop, RS_SIG, dict(BM=128, BN=64), 4, 3)
    t = k.asm["ct.ttgir"]
    loop = next(l for l in t.splitlines() if re.match(r"\s*%[\w, %]+ = for ", l))
    assert "block<128x64xf32, #mma<" in loop, loop
    big = [l for l in t.splitlines() if "= convert_layout " in l and ": block<128x64xf32" in l]
    assert len(big) == 1 and len(big[0]) - len(big[0].lstrip(" ")) == 2, big
    assert k.n_spills == 0


def test_attn_bwd_dq_loop_keeps_no_invariant_conversion(monkeypatch):
    """kernels/attention.py's backward, D64 with 4 warps: the dQ loop's
    Di[:, None] was converted through shared memory (two barriers) in every
    iteration; hoisted, the kernel has fewer bar.sync and no spills."""
    if not _have_ptxas():
        pytest.skip("ptxas not found")
    from kernels.attention import attn_bwd
    sig, cx = _attn_bwd_d64()
    monkeypatch.setenv("CTRITON_HOIST_CONVERTS", "0")
    k0 = _compile(attn_bwd, sig, cx, 4, 5)
    monkeypatch.setenv("CTRITON_HOIST_CONVERTS", "1")
    k1 = _compile(attn_bwd, sig, cx, 4, 5)
    s0, s1 = _slice_converts_in_loops(k0.asm["ct.ttgir"]), _slice_converts_in_loops(k1.asm["ct.ttgir"])
    assert s1 < s0, (s0, s1)
    b0, b1 = k0.asm["ptx"].count("bar.sync"), k1.asm["ptx"].count("bar.sync")
    assert b1 < b0, (b0, b1)
    assert k1.n_spills == 0, k1.n_spills


def test_attn_bwd_vectors_by_shuffles(monkeypatch):
    """CTRITON_SHFL_CONVERT=1 (opt-in until timed): the dK/dV loops of
    kernels/attention.py's backward (D64, 4 warps) read m and Di (loaded one
    element a lane, the warps holding copies) in a slice of the MMA layout
    through warp shuffles instead of shared memory: no scratch for those
    conversions, 8 fewer bar.sync in the kernel (two per vector and dK/dV
    loop), no spills."""
    if not _have_ptxas():
        pytest.skip("ptxas not found")
    from kernels.attention import attn_bwd
    sig, cx = _attn_bwd_d64()
    ks = []
    monkeypatch.setenv("CTRITON_ASYNC_VECTORS", "0")  # m and Di loads, not read from slots
    for v in ("0", "1"):
        monkeypatch.setenv("CTRITON_SHFL_CONVERT", v)
        ks.append(_compile(attn_bwd, sig, cx, 4, 5))
    off, on = ks
    vec = [line for line in on.asm["ct.ttgir"].splitlines()
           if "= convert_layout " in line and ": block<16xf32, #slice<dim = 0" in line]
    assert vec and not any("scratch_offset" in line for line in vec), vec
    assert on.asm["ptx"].count("shfl.sync.idx") > off.asm["ptx"].count("shfl.sync.idx")
    assert off.asm["ptx"].count("bar.sync") - on.asm["ptx"].count("bar.sync") == 8
    assert on.n_spills == 0


@pytest.mark.gpu
@pytest.mark.parametrize("hoist", ["0", "1"])
def test_row_vector_conversion_gpu(hoist, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    monkeypatch.setenv("CTRITON_HOIST_CONVERTS", hoist)
    g = torch.Generator(device="cuda").manual_seed(0)
    BM, BN, N = 128, 64, 5
    x = torch.randn(BM, BN, device="cuda", dtype=torch.float16, generator=g)
    y = torch.randn(N, BN, BN, device="cuda", dtype=torch.float16, generator=g)
    v = torch.randn(BM, device="cuda", dtype=torch.float32, generator=g)
    o = torch.empty(BM, BN, device="cuda", dtype=torch.float32)
    rowscale_loop[(1,)](x, y, v, o, N, BM=BM, BN=BN, num_warps=4, num_stages=3)
    ref = sum((x.float() @ y[i].float()) * v[:, None] for i in range(N))
    torch.testing.assert_close(o, ref, rtol=1e-2, atol=1e-2)


@triton.jit
def rownorm_epilogue(X, Y, O, L, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.dot(tl.load(X + rm[:, None] * BK + rk[None, :]), tl.load(Y + rk[:, None] * BN + rn[None, :]))
    l = tl.sum(tl.abs(acc), 1) + 1.0
    tl.store(L + rm, l)
    tl.store(O + rm[:, None] * BN + rn[None, :], (acc / l[:, None]).to(tl.float16))


RN_SIG = {"X": "*fp16", "Y": "*fp16", "O": "*fp16", "L": "*fp32", "BM": "constexpr", "BN": "constexpr",
          "BK": "constexpr"}


def _wide_converts(ttgir, shape):
    return [line.split(": block<")[1].split(",")[0] for line in ttgir.splitlines()
            if "= convert_layout " in line and f": block<{shape}x" in line and "#dot_op" not in line]


def test_epilogue_conversion_sinks_to_the_narrow_result(monkeypatch):
    """`(acc / l[:, None]).to(tl.float16)` (attention's epilogue): the 2-D
    conversion to the store's layout follows the division and the cast, so
    the f16 result goes through shared memory, not the f32 one (and l is
    not converted to the blocked layout's slice at all)."""
    if not _have_ptxas():
        pytest.skip("ptxas not found")
    monkeypatch.setenv("CTRITON_SINK_CONVERTS", "0")
    k0 = _compile(rownorm_epilogue, RN_SIG, dict(BM=128, BN=128, BK=64), 8, 1)
    monkeypatch.setenv("CTRITON_SINK_CONVERTS", "1")
    k1 = _compile(rownorm_epilogue, RN_SIG, dict(BM=128, BN=128, BK=64), 8, 1)
    assert _wide_converts(k0.asm["ct.ttgir"], "128x128") == ["128x128xf32"], k0.asm["ct.ttgir"]
    assert _wide_converts(k1.asm["ct.ttgir"], "128x128") == ["128x128xf16"], k1.asm["ct.ttgir"]
    assert k1.metadata.shared < k0.metadata.shared
    assert k1.n_spills == 0


def _vec_converts_after_loop(ttgir):
    tail = ttgir[ttgir.rindex(" = for "):]
    tail = tail[tail.index("\n  }"):]
    return [ln for ln in tail.splitlines() if "= convert_layout " in ln and ": block<128xf32" in ln]


@pytest.mark.parametrize("sink", ["0", "1"])
def test_attention_forward_epilogue_converts_f16(sink, monkeypatch):
    """kernels/attention.py's forward, D128 with 8 warps: the output tile is
    converted for its store as f16 (32 KiB), no longer as f32; and
    `m_i += log2(l_i)` runs in the slice of the mma layout where m and l
    are, with one conversion of its result for the store of M instead of
    one of m and one of l (sink_converts' merge; with
    CTRITON_SINK_CONVERTS=0 those two and one of l for the division)."""
    if not _have_ptxas():
        pytest.skip("ptxas not found")
    monkeypatch.setenv("CTRITON_SINK_CONVERTS", sink)
    from kernels.attention import attn_fwd
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp16"}
    for t in "qkvo":
        sig.update({f"stride_{t}z": "i32", f"stride_{t}h": "i32"})
        sig.update({f"stride_{t}{a}": "i32" for a in {"q": "m", "k": "n", "v": "k", "o": "m"}[t]})
        sig[f"stride_{t}{ {'q': 'k', 'k': 'k', 'v': 'n', 'o': 'n'}[t]}"] = "constexpr"
    sig.update({"Z": "i32", "H": "i32"})
    cx = dict(stride_qk=1, stride_kk=1, stride_vn=1, stride_on=1, N_CTX=2048, HEAD_DIM=128, BLOCK_M=128,
              BLOCK_N=64, STAGE=1)
    sig.update({k: "constexpr" for k in cx})
    k = _compile(attn_fwd, sig, cx, 8, 2)
    ttgir = k.asm["ct.ttgir"]
    assert _wide_converts(ttgir, "128x128") == ["128x128xf16" if sink == "1" else "128x128xf32"], ttgir
    n = len(_vec_converts_after_loop(ttgir))
    assert n == 1 if sink == "1" else n >= 2, _vec_converts_after_loop(ttgir)
    if sink == "1":
        assert re.search(r"= log2 [^\n]*block<128xf32, #slice<dim = 1, parent = #mma", ttgir)
    assert k.n_spills == 0


@pytest.mark.gpu
@pytest.mark.parametrize("sink", ["0", "1"])
def test_rownorm_epilogue_gpu(sink, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    monkeypatch.setenv("CTRITON_SINK_CONVERTS", sink)
    g = torch.Generator(device="cuda").manual_seed(1)
    BM, BN, BK = 128, 128, 64
    x = torch.randn(BM, BK, device="cuda", dtype=torch.float16, generator=g)
    y = torch.randn(BK, BN, device="cuda", dtype=torch.float16, generator=g)
    o = torch.empty(BM, BN, device="cuda", dtype=torch.float16)
    l = torch.empty(BM, device="cuda", dtype=torch.float32)
    rownorm_epilogue[(1,)](x, y, o, l, BM=BM, BN=BN, BK=BK, num_warps=8, num_stages=1)
    acc = x.float() @ y.float()
    ref_l = acc.abs().sum(1) + 1.0
    torch.testing.assert_close(l, ref_l, rtol=1e-3, atol=1e-2)
    torch.testing.assert_close(o, (acc / ref_l[:, None]).half(), rtol=1e-2, atol=1e-3)
