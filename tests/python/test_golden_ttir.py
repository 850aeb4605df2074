"""Golden TTIR of the tutorial kernels in kernels/: each kernel is compiled by
the frontend with a fixed signature and constexprs, through the pipeline's
TTIR passes (CSE, DCE), and its text compared byte for byte with
tests/python/golden/<name>.ttir. Paths in locations are made
relative to the repository root. Regenerate with CTRITON_UPDATE_GOLDEN=1."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
sys.path.insert(0, ROOT)

import ctriton._C as C  # noqa: E402


def ptrs(names, ty):
    return {n: ty for n in names.split()}


def ints(names, ty="i32"):
    return {n: ty for n in names.split()}


def _attn_fwd_case():
    sig = dict(Q="*fp16", K="*fp16", V="*fp16", sm_scale="fp32", M="*fp32", Out="*fp16", Z="i32", H="i32")
    for t in "qkvo":
        for s in "zh":
            sig[f"stride_{t}{s}"] = "i32"
    sig.update(stride_qm="i32", stride_kn="i32", stride_vk="i32", stride_om="i32")
    cx = dict(N_CTX=1024, HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, STAGE=3,
              stride_qk=1, stride_kk=1, stride_vn=1, stride_on=1)
    for n in ("stride_qk", "stride_kk", "stride_vn", "stride_on"):
        sig[n] = "constexpr"
    return sig, cx


D16 = {"divisibility": 16}

CASES = {
    "vector_add": ("kernels.vector_add", "add_kernel",
                   dict(x_ptr="*fp32", y_ptr="*fp32", output_ptr="*fp32", n_elements="i32"),
                   dict(BLOCK_SIZE=1024),
                   dict(x_ptr=D16, y_ptr=D16, output_ptr=D16, n_elements=D16), dict(num_warps=4)),
    "softmax": ("kernels.softmax", "softmax_kernel",
                dict(output_ptr="*fp32", input_ptr="*fp32", input_row_stride="i32",
                     output_row_stride="i32", n_rows="i32", n_cols="i32"),
                dict(BLOCK_SIZE=1024, num_stages=4), dict(output_ptr=D16, input_ptr=D16),
                dict(num_warps=8)),
    "matmul": ("kernels.matmul", "matmul_kernel",
               dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp16", M="i32", N="i32", K="i32",
                    stride_am="i32", stride_bk="i32", stride_cm="i32"),
               dict(stride_ak=1, stride_bn=1, stride_cn=1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=64,
                    BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="leaky_relu"),
               dict(a_ptr=D16, b_ptr=D16, c_ptr=D16, M=D16, N=D16, K=D16, stride_am=D16,
                    stride_bk=D16, stride_cm=D16),
               dict(num_warps=4, num_stages=4)),
    "dropout": ("kernels.dropout", "seeded_dropout_kernel",
                dict(x_ptr="*fp32", output_ptr="*fp32", n_elements="i32", p="fp32", seed="i32"),
                dict(BLOCK_SIZE=1024), dict(x_ptr=D16, output_ptr=D16), dict(num_warps=4)),
    "layernorm_fwd": ("kernels.layernorm", "layer_norm_fwd",
                      dict(X="*fp16", Y="*fp16", W="*fp16", B="*fp16", Mean="*fp32", Rstd="*fp32",
                           stride="i32", N="i32", eps="fp32"),
                      dict(BLOCK_SIZE=1024), dict(X=D16, Y=D16, W=D16, B=D16), dict(num_warps=8)),
    "layernorm_bwd_dx": ("kernels.layernorm", "layer_norm_bwd_dx_fused",
                         dict(DX="*fp16", DY="*fp16", DW="*fp16", DB="*fp16", X="*fp16", W="*fp16",
                              Mean="*fp32", Rstd="*fp32", Lock="*i32", stride="i32", N="i32"),
                         dict(GROUP_SIZE_M=64, BLOCK_SIZE_N=1024), {}, dict(num_warps=8)),
    "layernorm_bwd_dwdb": ("kernels.layernorm", "layer_norm_bwd_dwdb",
                           dict(DW="*fp16", DB="*fp16", FINAL_DW="*fp16", FINAL_DB="*fp16",
                                M="i32", N="i32"),
                           dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=128), {}, dict(num_warps=4)),
    "attention_fwd": ("kernels.attention", "attn_fwd", *_attn_fwd_case(), {},
                      dict(num_warps=8, num_stages=3)),
    "attention_bwd_preprocess": ("kernels.attention", "attn_bwd_preprocess",
                                 dict(O="*fp16", DO="*fp16", Delta="*fp32", Z="i32", H="i32",
                                      N_CTX="i32"),
                                 dict(BLOCK_M=128, HEAD_DIM=64), {}, dict(num_warps=4)),
    "attention_bwd": ("kernels.attention", "attn_bwd",
                      dict(Q="*fp16", K="*fp16", V="*fp16", sm_scale="fp32", DO="*fp16",
                           DQ="*fp16", DK="*fp16", DV="*fp16", M="*fp32", D="*fp32",
                           stride_z="i32", stride_h="i32", stride_tok="i32", H="i32", N_CTX="i32"),
                      dict(stride_d=1, BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32,
                           BLK_SLICE_FACTOR=2, HEAD_DIM=64),
                      {}, dict(num_warps=4, num_stages=5)),
}


def compile_case(name):
    import importlib
    mod, fn, sig, cx, attrs, opts = CASES[name]
    kernel = getattr(importlib.import_module(mod), fn)
    sig = dict(sig)
    for k in cx:
        sig[k] = "constexpr"
    text = C.ast_to_ttir(kernel, sig, cx, attrs, opts)
    # the TTIR stage of the pipeline: the frontend's text after CSE and DCE
    r = C.compile_ttir(text, name, C.BACKEND_CPU, 0, 1, dict(opts), True)
    assert "error" not in r, r.get("error")
    return r["ct.ttir"].replace(ROOT + os.sep, "")


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    text = compile_case(name)
    path = os.path.join(GOLDEN, name + ".ttir")
    if os.environ.get("CTRITON_UPDATE_GOLDEN") == "1" or not os.path.exists(path):
        with open(path, "w") as f:
            f.write(text)
        if os.environ.get("CTRITON_UPDATE_GOLDEN") != "1":
            pytest.fail(f"created missing golden file {path}; check it in")
        return
    with open(path) as f:
        want = f.read()
    assert text == want, f"TTIR of {name} changed; regenerate with CTRITON_UPDATE_GOLDEN=1"
