"""Small kernels for test_frontend.py (kept in a file: @jit reads source)."""
import ctriton as triton
import ctriton.language as tl

SCALE: tl.constexpr = 4
WIDTH = tl.constexpr(8)


@triton.jit
def promote(X, Y, OUT, OP: tl.constexpr):
    x = tl.load(X)
    y = tl.load(Y)
    if OP == "add":
        r = x + y
    elif OP == "div":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "addint":
        r = x + 1
    elif OP == "addfloat":
        r = x + 1.5
    elif OP == "cmp":
        r = x < y
    else:
        r = x >> 2
    tl.store(OUT, r)


@triton.jit
def bcast(X, OUT, M: tl.constexpr, N: tl.constexpr):
    a = tl.arange(0, M)
    b = tl.arange(0, N)
    offs = a[:, None] * N + b[None, :]
    x = tl.load(X + offs)
    tl.store(OUT + offs, x * 2)


@triton.jit
def globals_kernel(X):
    offs = tl.arange(0, SCALE * WIDTH)
    tl.store(X + offs, offs)


@triton.jit
def add_one(x):
    return x + 1


@triton.jit
def pair(x):
    return x, x * 2


@triton.jit
def calls(X):
    a, b = pair(tl.load(X))
    tl.store(X, add_one(a) + b)


@triton.jit(noinline=True)
def not_inlined(x):
    return x * 3


@triton.jit
def noinline_kernel(X):
    tl.store(X, not_inlined(tl.load(X)))


@triton.jit
def loops(X, n):
    acc = 0.0
    i = 0
    while i < n:
        acc += tl.load(X + i)
        i += 1
    for k in tl.range(0, n, 2, num_stages=3, loop_unroll_factor=2):
        acc += 1.0
    for j in tl.static_range(3):
        acc += j
    tl.store(X, acc)


@triton.jit
def runtime_if(X, n):
    x = tl.load(X)
    if n > 0:
        x = x * 2
    elif n < -5:
        x = x + 1
    y = x if n > 3 else 0.0
    tl.store(X, y)


@triton.jit
def early_return_helper(x, n):
    if n > 0:
        return x * 2
    return x


@triton.jit
def early_return(X, n):
    tl.store(X, early_return_helper(tl.load(X), n))


@triton.jit
def reductions(X, Y, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(X + offs)
    s = tl.sum(x, axis=1)
    m = tl.max(x, 0, keep_dims=True)
    i = tl.argmax(x, axis=1)
    c = tl.cumsum(x, axis=1)
    tl.store(Y + tl.arange(0, M), s + i.to(tl.float32))
    tl.store(Y + offs, c + m)


@triton.jit
def _combine(a, b):
    return a * b


@triton.jit
def generic_reduce(X):
    x = tl.load(X + tl.arange(0, 16))
    tl.store(X, tl.reduce(x, 0, _combine))
    tl.store(X + tl.arange(0, 16), tl.associative_scan(x, 0, _combine))


@triton.jit
def shapes(X):
    x = tl.load(X + tl.arange(0, 64))
    y = tl.reshape(x, (8, 8))
    z = y.T
    w = tl.permute(tl.reshape(x, 4, 4, 4), (2, 0, 1))
    a, b = tl.split(tl.reshape(x, (32, 2)))
    j = tl.join(a, b)
    e = tl.expand_dims(x, 0)
    bc = tl.broadcast_to(e, (4, 64))
    tl.store(X + tl.arange(0, 64), tl.ravel(z) + tl.ravel(w) + tl.ravel(j) + tl.sum(bc, 0))


@triton.jit
def memory(X, I, L):
    offs = tl.arange(0, 16)
    x = tl.load(X + offs, mask=offs < 8, other=1.0, cache_modifier=".cg", eviction_policy="evict_last", volatile=True)
    tl.atomic_add(X + offs, x, mask=offs < 4, sem="relaxed", scope="cta")
    tl.atomic_max(I + offs, 3)
    old = tl.atomic_cas(L, 0, 1)
    tl.atomic_xchg(L, old)
    tl.store(X + offs, x, mask=offs < 8, cache_modifier=".wb")


@triton.jit
def misc(X, Y, Z):
    x = tl.load(X + tl.arange(0, 16))
    y = tl.load(Y + tl.arange(0, 16))
    z = tl.where(x > 0, x, y)
    z = tl.minimum(z, 1.0) + tl.maximum(z, y, propagate_nan=tl.PropagateNan.ALL)
    z = tl.clamp(z, -1.0, 1.0) + tl.math.exp2(z) + tl.sqrt_rn(z) + tl.fdiv(z, y) + tl.fma(z, y, x)
    z = tl.sigmoid(z) + tl.softmax(z)
    h = tl.multiple_of(tl.load(Z), 16)
    u = x.to(tl.int32, bitcast=True).to(tl.uint32, bitcast=True)
    v = tl.umulhi(u, 7)
    tl.debug_barrier()
    tl.device_print("v", v)
    tl.store(X + tl.arange(0, 16) + h, z + v.to(tl.float32) + tl.extra.libdevice.tanh(z))


@triton.jit
def rng(X, seed):
    offs = tl.arange(0, 128)
    a = tl.rand(seed, offs)
    b = tl.randn(seed, offs)
    c = tl.randint(seed, offs)
    tl.store(X + offs, a + b + c.to(tl.float32))


@triton.jit
def asserts(X):
    x = tl.load(X)
    assert x > 0, "positive"
    tl.device_assert(x < 10, "small")
    tl.store(X, x)


@triton.jit
def keywords_after_star(X):
    # keyword parameters that follow a *param of the builtin's signature
    tl.device_print("v", tl.load(X), hex=True)
    y = tl.reshape(tl.arange(0, 8), 2, 4, can_reorder=True)
    tl.store(X + tl.arange(0, 8), tl.reshape(y, 8, can_reorder=True))
