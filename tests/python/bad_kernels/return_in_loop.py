# expect: `return` inside a `for` or `while` loop
# at: 12:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    for i in range(n):
        return
