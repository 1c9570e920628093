"""ts_runtime.ptx_values: a register written several times, read right after a local write.

NVVM reuses a loop's phi-web register for a constant elsewhere (found by ``bench/fuzz_gpu.py``:
an arrive's count ``mov.b32 %r117, 1`` in a register that a later loop uses for a phase), so
the value an instruction reads is the write before it in its block when there is one.
"""

from __future__ import annotations

from ts_runtime.ptx_cfg import parse_kernel
from ts_runtime.ptx_protocol import recover
from ts_runtime.ptx_values import Values

PTX = """
.version 8.8
.target sm_90a
.address_size 64

.visible .entry k()
.reqntid 32, 1, 1
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<2>;
	mov.b32 %r1, 1;
	mbarrier.arrive.shared.b64 %rd1, [%r2], %r1;
	mov.b32 %r1, 0;
$L__BB0_1:
	mbarrier.arrive.shared.b64 %rd1, [%r2], %r1;
	xor.b32 %r1, %r1, 1;
	@%p1 mov.b32 %r1, 7;
	mbarrier.arrive.shared.b64 %rd1, [%r2], %r1;
	bra.uni $L__BB0_1;
}
"""


def test_a_read_sees_the_write_before_it_in_its_block() -> None:
    kernel = parse_kernel(PTX)
    values = Values(kernel)
    first, in_loop, guarded = (i for i in kernel.instrs if i.has("mbarrier.arrive"))
    assert values.concrete("%r1", 0) is None  # three writes: no single value
    assert values.concrete_at("%r1", first, 0) == 1
    assert values.concrete_at("%r1", in_loop, 0) is None  # the loop's phi web
    assert values.concrete_at("%r1", guarded, 0) is None  # a guarded write may not happen
    counts = [op.count for op in recover(kernel).barriers if op.kind == "arrive"]
    assert counts == [1, None, None]
