"""One process per GPU under torch.distributed: each rank runs a ctriton
kernel on its own device (torch.cuda.set_device(LOCAL_RANK)), on torch's
current stream and on a side stream, all-reduces the outputs with NCCL and
checks the sums, which are exact (integer-valued float32 below 2**24).

    NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node=2 tests/distributed/allreduce_check.py

Without GPUs the same check runs over gloo on ctriton's CPU backend:

    torchrun --nproc_per_node=2 tests/distributed/allreduce_check.py --cpu

Rank 0 prints "allreduce_check: OK (...)" and every rank exits 0 when all
checks pass; a failed check raises on its rank, and torchrun exits non-zero.
"""
import argparse
import os
import sys

# NVLink multicast (NVLS) off: set before NCCL makes its communicator.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import ctriton as triton  # noqa: E402
import ctriton.language as tl  # noqa: E402


@triton.jit
def rank_affine(x_ptr, out_ptr, n, scale, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * scale + shift, mask=m)


def launch(x, out, rank, block=1024):
    n = x.numel()
    return rank_affine[(triton.cdiv(n, block),)](x, out, n, float(rank + 1), float(rank),
                                                 BLOCK=block)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", action="store_true",
                    help="gloo and ctriton's CPU backend (no GPU needed)")
    ap.add_argument("--numel", type=int, default=(1 << 20) + 3)
    args = ap.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.cpu:
        triton.runtime.driver.set_active("cpu")
        device = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=world)
    else:
        if not torch.cuda.is_available() or torch.cuda.device_count() <= local_rank:
            raise SystemExit(f"rank {rank}: no cuda:{local_rank} (torch sees "
                             f"{torch.cuda.device_count()} GPUs)")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)

    # The same input on every rank; rank r computes x * (r + 1) + r.
    x = (torch.arange(args.numel, dtype=torch.float32, device=device) % 1024)
    out = torch.empty_like(x)
    ck = launch(x, out, rank)
    mine = x * (rank + 1) + rank
    if not torch.equal(out, mine):
        raise AssertionError(f"rank {rank}: the kernel's own output is wrong")
    if not args.cpu:
        loaded = sorted(ck._binary.loaded())
        if loaded != [local_rank]:
            raise AssertionError(f"rank {rank}: kernel loaded on devices {loaded}, "
                                 f"expected [{local_rank}]")

    # Sum over ranks: x * W(W+1)/2 + W(W-1)/2.
    dist.all_reduce(out)
    want = x * (world * (world + 1) // 2) + world * (world - 1) // 2
    if not torch.equal(out, want):
        bad = int((out != want).sum())
        raise AssertionError(f"rank {rank}: all_reduce of the kernel outputs: {bad} of "
                             f"{args.numel} elements wrong")

    # On a side stream: the collective (which waits for the current stream)
    # must see the kernel's writes, so the kernel must be on that stream too.
    if not args.cpu:
        side = torch.cuda.Stream(device=device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            out2 = torch.empty_like(x)
            launch(x, out2, rank)
            dist.all_reduce(out2)
        torch.cuda.current_stream(device).wait_stream(side)
        torch.cuda.synchronize(device)
        if not torch.equal(out2, want):
            raise AssertionError(f"rank {rank}: all_reduce on a side stream: "
                                 f"{int((out2 != want).sum())} elements wrong")

    dist.barrier()
    if rank == 0:
        what = "gloo, CPU backend" if args.cpu else f"nccl, {torch.cuda.get_device_name(0)}"
        print(f"allreduce_check: OK (world {world}, {what}, {args.numel} elements)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
