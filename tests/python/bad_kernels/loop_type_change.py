# expect: loop-carried variable acc changed type
# at: 12:5
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    acc = tl.zeros((16,), dtype=tl.float32)
    for i in range(n):
        acc = acc.to(tl.float16)
