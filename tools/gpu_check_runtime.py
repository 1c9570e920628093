"""GPU check of kernels written with ``Task`` / ``TaskManager`` (ts-runtime's test kernels).

Runs the grid-stride copy, the copy with a per-tile ``get_domain`` bound, the TMA copy and the
persistent guard kernel (per-row domains, first/last/every blocks, a loop-carried value and a
``when_false`` condition) of ``packages/ts-runtime/tests/runtime_kernels.py`` on the GPU and
compares with the source or a Python model::

    source .gpu/setup.sh && python3 tools/gpu_check_runtime.py

Prints one JSON line per kernel; exits 1 if any result differs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "packages/ts-runtime/tests"))


def main() -> int:
    import cutlass
    import cutlass.cute as cute
    import runtime_kernels as rk  # type: ignore[import-not-found]  # a test module
    import torch
    from cutlass.cute.runtime import from_dlpack

    failed = False
    n = 1 << 24
    for name, fn in (("grid_stride_copy", rk.grid_stride_copy), ("dynamic_copy", rk.dynamic_copy)):
        src_t = torch.randn(n, device="cuda", dtype=torch.float16)
        dst_t = torch.zeros_like(src_t)
        src, dst = from_dlpack(src_t, assumed_align=16), from_dlpack(dst_t, assumed_align=16)
        compiled: Any = cute.compile(fn, src, dst, cutlass.Int32(n))
        compiled(src, dst, cutlass.Int32(n))
        torch.cuda.synchronize()
        ok = bool(torch.equal(dst_t, src_t))
        failed |= not ok
        print(json.dumps({"kernel": name, "elements": n, "correct": ok}), flush=True)
    src2 = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    dst2 = torch.zeros_like(src2)
    s, d = from_dlpack(src2, assumed_align=16), from_dlpack(dst2, assumed_align=16)
    compiled2: Any = cute.compile(rk.tma_copy, s, d)
    compiled2(s, d)
    torch.cuda.synchronize()
    ok = bool(torch.equal(dst2, src2))
    failed |= not ok
    print(json.dumps({"kernel": "tma_copy", "shape": [4096, 4096], "correct": ok}), flush=True)
    rows = 1000
    lengths = [(r * 7) % 13 for r in range(rows)]  # 0..12, zeros included
    flags = [1 if r % 5 == 0 else 0 for r in range(rows)]
    out3 = torch.full((rows, 5), -1, dtype=torch.int32, device="cuda")
    len_t = torch.tensor(lengths, dtype=torch.int32, device="cuda")
    flag_t = torch.tensor(flags, dtype=torch.int32, device="cuda")
    args3 = [from_dlpack(t, assumed_align=4) for t in (out3, len_t, flag_t)]
    compiled3: Any = cute.compile(rk.guard_rows, *args3)
    compiled3(*args3)
    torch.cuda.synchronize()
    ok = out3.cpu().tolist() == rk.guards_reference(lengths, flags)
    failed |= not ok
    print(json.dumps({"kernel": "guard_rows", "rows": rows, "correct": ok}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
