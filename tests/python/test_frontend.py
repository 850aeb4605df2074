"""Frontend unit tests: small kernels compiled to TTIR, checked for the ops
and types that Triton's semantics call for (promotion, broadcasting, control
flow, calls, builtins)."""
import re

import pytest

import ctriton._C as C
import fe_kernels as K


def ttir(fn, sig, cx=None, opts=None, attrs=None):
    sig = dict(sig)
    for k in (cx or {}):
        sig[k] = "constexpr"
    text = C.ast_to_ttir(fn, sig, cx or {}, attrs or {}, opts or {})
    # the TTIR stage of the pipeline: after CSE and DCE
    r = C.compile_ttir(text, fn.__name__, C.BACKEND_CPU, 0, 1, dict(opts or {}), True)
    assert "error" not in r, r.get("error")
    return r["ct.ttir"]


def count(text, op):
    return len(re.findall(rf"(?:= |^\s+){re.escape(op)} ", text, re.M))


P3 = {"X": "*fp32", "Y": "*fp32", "OUT": "*fp32"}


@pytest.mark.parametrize("xt,yt,op,want", [
    ("fp16", "fp32", "add", "add %5, %4 : f32"),
    ("fp16", "fp16", "add", ": f16"),
    ("bf16", "fp16", "add", "cast %3 : f16"),  # fp16 rule comes first in Triton
    ("i32", "i32", "div", "cast %3 : f32"),
    ("i16", "i32", "add", "cast %3 : i32"),
    ("u32", "i32", "add", "cast %4 : u32"),
    ("i64", "u32", "add", "cast %4 : i64"),
    ("fp16", "fp16", "div", "div %5, %6 : f32"),
    ("i32", "i32", "floordiv", "div %3, %4 : i32"),
    ("i32", "i32", "mod", "rem %3, %4 : i32"),
    ("fp32", "fp32", "floordiv", "floor"),
    ("fp16", "fp16", "addint", "constant {value = 1.0} : f16"),
    ("i16", "i16", "addint", "constant {value = 1} : i16"),
    ("i16", "i16", "addfloat", "cast %3 : f32"),
    ("fp16", "fp32", "cmp", "cmp %5, %4 {pred = \"lt\"} : i1"),
    ("u8", "u8", "shr", "constant {value = 2} : u8"),
])
def test_promotion(xt, yt, op, want):
    sig = {"X": "*" + xt, "Y": "*" + yt, "OUT": "*fp32"}
    text = ttir(K.promote, sig, {"OP": op})
    assert want in text, text


def test_broadcasting():
    text = ttir(K.bcast, {"X": "*fp32", "OUT": "*fp32"}, {"M": 16, "N": 32})
    assert "expand_dims %2 {axis = 1} : block<16x1xi32>" in text
    assert "expand_dims %3 {axis = 0} : block<1x32xi32>" in text
    assert count(text, "broadcast") == 2
    assert "block<16x32xptr<f32>>" in text
    assert "constant {value = 2.0} : block<16x32xf32>" in text


def test_signature_and_attrs():
    text = ttir(K.bcast, {"X": "*kfp16", "OUT": "*bf16"}, {"M": 16, "N": 16},
                {"num_warps": 8, "num_ctas": 1}, {"X": {"divisibility": 16}})
    assert text.startswith("module {num_ctas = 1, num_warps = 8}")
    # "*k": a tl.const (read-only) pointer
    assert "%0: ptr<f16, const> {divisibility = 16}, %1: ptr<bf16>)" in text


def test_constexpr_tuple_keys():
    sig = {"X": "*fp32", "OUT": "*fp32", "M": "constexpr", "N": "constexpr"}
    text = C.ast_to_ttir(K.bcast, sig, {(2,): 4, (3,): 8}, {}, {})
    assert "block<4x8xf32>" in text


def test_constexpr_globals():
    text = ttir(K.globals_kernel, {"X": "*i32"})
    assert "make_range {end = 32, start = 0}" in text


def test_inlined_calls_and_tuples():
    text = ttir(K.calls, {"X": "*fp32"})
    assert count(text, "call") == 0
    assert count(text, "mul") == 1 and count(text, "add") == 2


def test_noinline():
    text = ttir(K.noinline_kernel, {"X": "*fp32"})
    assert "func noinline @not_inlined_0(%0: f32) -> (f32)" in text
    assert "call %" in text and "{callee = @not_inlined_0}" in text


def test_loops():
    raw = C.ast_to_ttir(K.loops, {"X": "*fp32", "n": "i32"}, {}, {}, {})
    assert "{loop_unroll_factor = 2, num_stages = 3}" in raw
    text = ttir(K.loops, {"X": "*fp32", "n": "i32"})
    assert count(text, "while") == 1 and count(text, "condition") == 1
    # static_range unrolled: three constant adds after the runtime loop
    assert "constant {value = 2.0} : f32" in text
    # the tl.range loop unrolled twice (unroll-loops), then its remainder
    assert count(text, "for") == 2 and "{num_stages = 3}" in text and "{num_stages = 1}" in text


def test_runtime_if_and_ternary():
    text = ttir(K.runtime_if, {"X": "*fp32", "n": "i32"})
    assert count(text, "if") == 2
    assert count(text, "select") == 1


def test_early_return():
    text = ttir(K.early_return, {"X": "*fp32", "n": "i32"})
    assert re.search(r"= if %\d+ : f32", text), text


def test_reductions():
    text = ttir(K.reductions, {"X": "*fp32", "Y": "*fp32"}, {"M": 16, "N": 32})
    assert count(text, "reduce") == 3 and count(text, "scan") == 1
    assert "reduce %" in text and ": block<16xf32>, block<16xi32>" in text


def test_generic_reduce_and_scan():
    text = ttir(K.generic_reduce, {"X": "*fp32"})
    assert count(text, "reduce") == 1 and count(text, "scan") == 1
    assert count(text, "mul") == 2


def test_shapes():
    text = ttir(K.shapes, {"X": "*fp32"})
    assert "trans %" in text and "{order = [1, 0]}" in text and "{order = [2, 0, 1]}" in text
    assert count(text, "split") == 1 and count(text, "join") == 1
    assert "block<4x64xf32>" in text


def test_memory_ops():
    text = ttir(K.memory, {"X": "*fp32", "I": "*i32", "L": "*i32"})
    assert '{cache = "cg", evict = "evict_last", volatile = true}' in text
    assert '{kind = "add", scope = "cta", sem = "relaxed"}' in text
    assert '{kind = "max", scope = "gpu", sem = "acq_rel"}' in text
    assert "atomic_cas" in text and '{kind = "xchg"' in text
    assert '{cache = "wb"}' in text


def test_misc_builtins():
    text = ttir(K.misc, {"X": "*fp32", "Y": "*fp32", "Z": "*i32"})
    for op in ("select", "min", "max", "exp2", "sqrt", "fma", "umulhi", "bitcast", "barrier",
               "print", "multiple_of", "extern"):
        assert count(text, op) >= 1, op
    assert '{propagate_nan = "all"}' in text
    assert '{rounding = "rn"}' in text
    assert '__nv_tanhf' in text


def test_random():
    text = ttir(K.rng, {"X": "*fp32", "seed": "i32"})
    # three Philox calls of 10 rounds, 2 products each; DCE drops the last
    # round's products that feed outputs the callers do not use
    assert count(text, "umulhi") == 54
    assert "3528531795" in text and "2654435769" in text


def test_asserts_only_in_debug():
    assert count(ttir(K.asserts, {"X": "*i32"}), "assert") == 0
    text = ttir(K.asserts, {"X": "*i32"}, opts={"debug": True})
    assert count(text, "assert") == 2 and 'msg = "positive"' in text


def test_no_crash_on_garbage():
    with pytest.raises(Exception):
        C.ast_to_ttir(42, {}, {}, {}, {})


def test_keywords_after_a_star_parameter():
    text = ttir(K.keywords_after_star, {"X": "*i32"})
    assert "print %1 {hex = true" in text
    assert count(text, "reshape") == 2 and text.count("can_reorder = true") == 2
