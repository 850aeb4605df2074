# expect: Mismatched type for y: f32 in the then-branch, i32 in the else-branch
# at: 11:5
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    if n > 0:
        y = n.to(tl.float32)
    else:
        y = n
    z = y
