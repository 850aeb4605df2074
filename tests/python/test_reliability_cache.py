"""Cache chaos: several processes write and read one cache directory (the
same and different keys, multi-megabyte entries and real kernels) while
some of them are killed with SIGKILL, often in the middle of a write. No
process may ever load a torn entry or another key's entry; entries are
verified before use; the directory is private (0700) and the temporary
files of killed writers are cleaned up. Also run as a script: the workers."""
import hashlib
import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import ctriton as triton  # noqa: E402
import ctriton.language as tl  # noqa: E402
from ctriton import _C  # noqa: E402

SHARED_KEYS = 4


def blob_key(name):
    return hashlib.sha256(name.encode()).hexdigest()


def blob_content(key):
    """What key must hold: 4 to 19 MB derived from the key alone (large,
    so that writes take long enough to be killed in the middle)."""
    h = hashlib.sha256(key.encode()).digest()
    size = (4 + h[0] % 16) << 20
    return {"head": key.encode() + b"|" + h, "body": (h * (size // 32 + 1))[:size]}


@triton.jit
def chaos_kernel(X, Y, n, C: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=m) * 2 + C, mask=m)


VARIANTS = [(c, b) for c in (1, 2, 3) for b in (64, 128)]


def mark_ready():
    """Tells the parent that start-up is over (a file named by the pid)."""
    ready = os.environ.get("CHAOS_READY_DIR")
    if ready:
        open(os.path.join(ready, str(os.getpid())), "w").close()


def worker_blobs(seconds, seed):
    """Reads and writes shared and private keys; every hit must be exactly
    its key's content, and nothing may read as corrupt."""
    rng = random.Random(seed)
    keys = [blob_key(f"shared{i}") for i in range(SHARED_KEYS)]
    keys += [blob_key(f"own{os.getpid()}.{i}") for i in range(2)]
    want = {k: blob_content(k) for k in keys}
    root = _C.cache_root()
    st = {"hits": 0, "misses": 0, "puts": 0, "bad": 0, "corrupt": 0}
    mark_ready()
    end = time.time() + seconds
    while time.time() < end:
        k = rng.choice(keys)
        if rng.random() < 0.3:
            r = _C.cache_get(root, k)
            if r is None:
                st["misses"] += 1
            elif r is False:
                st["corrupt"] += 1
            else:
                st["hits"] += 1
                st["bad"] += r != want[k]
        else:
            _C.cache_put(root, k, want[k])
            st["puts"] += 1
    return st


def worker_kernels(seconds, seed):
    """Compiles (or loads from disk) and runs kernel variants; each result
    must be its own variant's."""
    from ctriton.runtime.driver import driver
    driver.set_active("cpu")
    rng = random.Random(seed)
    n = 1000
    x = np.arange(n, dtype=np.float32)
    st = {"runs": 0, "bad": 0, "corrupt": 0}
    mark_ready()
    end = time.time() + seconds
    while time.time() < end:
        c, b = rng.choice(VARIANTS)
        chaos_kernel.clear_cache()  # read the disk cache every time
        y = np.zeros(n, np.float32)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            chaos_kernel[(triton.cdiv(n, b),)](x, y, n, c, b)
        st["corrupt"] += sum("corrupt" in str(m.message) for m in w)
        st["runs"] += 1
        st["bad"] += not np.array_equal(y, x * 2 + c)
    return st


def spawn(kind, seconds, seed, env):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), kind, str(seconds), str(seed)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def chaos_dir(tmp_path):
    """A fresh directory, in memory where possible: writes to a slow disk
    block in writeback, and fewer kills would land inside a write."""
    import pathlib
    import shutil
    import tempfile
    base = tmp_path
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        base = pathlib.Path(tempfile.mkdtemp(prefix="ctriton-chaos-", dir="/dev/shm"))
    yield base / "cache" / "ctriton"
    if base != tmp_path:
        shutil.rmtree(base, ignore_errors=True)


def test_cache_chaos(chaos_dir):
    root = chaos_dir
    ready = root.parent.parent / "ready"
    ready.mkdir(parents=True)
    env = dict(os.environ, CTRITON_CACHE_DIR=str(root), CTRITON_BACKEND="cpu", CHAOS_READY_DIR=str(ready),
               PYTHONPATH=os.pathsep.join([HERE, os.path.join(HERE, "..", "..", "python")]))
    env.pop("CTRITON_ALWAYS_COMPILE", None)
    rng = random.Random(0)
    duration = 5.0
    procs = [spawn("blobs", duration, s, env) for s in range(4)] + \
            [spawn("kernels", duration + 2, 10 + s, env) for s in range(2)]
    t0 = time.time()
    while not root.exists() and time.time() < t0 + 60:  # the workers' start-up
        time.sleep(0.05)
    seed = 100
    killed, torn, finished = 0, 0, []
    t_end = time.time() + duration + 1
    while time.time() < t_end:
        time.sleep(rng.uniform(0.03, 0.2))
        p = rng.choice(procs)
        # kill workers past their start-up, busy with the cache; kernel
        # workers only early on, so that some finish their runs
        kind = p.args[2]
        if p.poll() is not None or not os.path.exists(ready / str(p.pid)):
            continue
        if kind == "kernels" and (time.time() > t_end - 3 or rng.random() < 0.7):
            continue
        p.send_signal(signal.SIGKILL)
        p.wait()
        killed += 1
        if any(f.startswith("tmp.") and f".{p.pid}." in f for f in os.listdir(root)):
            torn += 1  # it died with a temporary file half written
        procs.remove(p)
        left = t_end - time.time()
        procs.append(spawn(kind, max(0.5, left) + (2 if kind == "kernels" else 0), seed, env))
        seed += 1
    for p in procs:
        out, err = p.communicate(timeout=180)
        if p.returncode == -signal.SIGKILL:
            continue
        assert p.returncode == 0, err
        finished.append(json.loads(out.strip().splitlines()[-1]))
    assert killed >= 5
    total = {k: sum(f.get(k, 0) for f in finished) for k in ("hits", "puts", "runs", "bad", "corrupt")}
    assert total["bad"] == 0 and total["corrupt"] == 0, total
    assert total["hits"] > 0 and total["puts"] > 0 and total["runs"] > 0, total

    # the directory is private; every entry is complete and its key's own
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    entries = [f for f in os.listdir(root) if not f.startswith("tmp.") and f != "source-index"]
    for f in entries:
        assert stat.S_IMODE(os.stat(root / f).st_mode) == 0o600
        r = _C.cache_get(str(root), f)
        assert isinstance(r, dict), f
    # the kernels' source index (runtime/jit.py) is entries of the same kind
    index = root / "source-index"
    assert stat.S_IMODE(os.stat(index).st_mode) == 0o700
    for f in os.listdir(index):
        if not f.startswith("tmp."):
            assert stat.S_IMODE(os.stat(index / f).st_mode) == 0o600
            assert isinstance(_C.cache_get(str(index), f), dict), f
    blob_keys = {blob_key(f"shared{i}") for i in range(SHARED_KEYS)}
    for k in blob_keys & set(entries):
        assert _C.cache_get(str(root), k) == blob_content(k)
    # writers killed mid-write left temporaries; the next write removes them
    assert torn >= 1, f"none of the {killed} kills landed in the middle of a write"
    _C.cache_put(str(root), blob_key("last"), {"x": b"1"})
    assert not [f for f in os.listdir(root) if f.startswith("tmp.")]


def test_foreign_and_torn_entries_are_not_loaded(tmp_path):
    root = str(tmp_path / "c")
    a, b = blob_key("a"), blob_key("b")
    _C.cache_put(root, a, {"v": b"A" * 1000})
    _C.cache_put(root, b, {"v": b"B" * 1000})
    # an entry copied under another key's name is not that key's
    with open(os.path.join(root, a), "rb") as f:
        ea = f.read()
    with open(os.path.join(root, b), "wb") as f:
        f.write(ea)
    assert _C.cache_get(root, b) is False
    assert not os.path.exists(os.path.join(root, b))  # removed
    assert _C.cache_get(root, a) == {"v": b"A" * 1000}
    # every truncation of an entry reads as corrupt
    for cut in range(0, len(ea), 97):
        with open(os.path.join(root, a), "wb") as f:
            f.write(ea[:cut])
        assert _C.cache_get(root, a) in (False, None)
    # keys that are not plain names are refused
    with pytest.raises(OSError):
        _C.cache_put(root, "../x", {"v": b"1"})
    assert _C.cache_get(root, "../x") is None



@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory another user's")
def test_directory_of_another_user_is_not_used(tmp_path):
    root = str(tmp_path / "other")
    k = blob_key("k")
    _C.cache_put(root, k, {"v": b"1"})
    assert _C.cache_get(root, k) == {"v": b"1"}
    os.chown(root, 65534, 65534)
    assert _C.cache_get(root, k) is None  # not trusted
    with pytest.raises(OSError, match="another user"):
        _C.cache_put(root, k, {"v": b"1"})


def test_new_cache_directory_is_private(tmp_path):
    root = tmp_path / "a" / "b" / "ctriton"
    _C.cache_put(str(root), blob_key("k"), {"v": b"1"})
    for d in (root, root.parent, root.parent.parent):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(root / blob_key("k")).st_mode) == 0o600


if __name__ == "__main__":
    kind, seconds, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    fn = worker_blobs if kind == "blobs" else worker_kernels
    print(json.dumps(fn(seconds, seed)), flush=True)
