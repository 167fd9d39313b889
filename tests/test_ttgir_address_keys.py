"""A read is keyed by the elements it addresses (``Walker.read_key``): a second pass over a row
reads what the first pass brought into the L2.

Set 1's RMSNorm (kernels/triton/heldout.py ``rmsnorm_kernel``: one program per row; a first loop
sums the squares of ``x[row, :]``, a second loop reads ``x[row, :]`` again with ``w`` and writes
``y``) ran 1.41x the time the model gave it while its loads were keyed by their site: the second
pass was a second DRAM read.  On the H200 it re-reads a row it read a few microseconds before.
What the tests expect is computed from the kernel's source: 4096 columns, BLOCK 1024, so each
loop makes four reads of the row, the second loop's n-th the same 1024 elements as the first's."""

from __future__ import annotations

from pathlib import Path

from protosim.frontends.ttgir import read
from protosim.ir import GlobalLoad

RMSNORM = (Path(__file__).resolve().parent / "fixtures" / "triton" / "heldout" / "triton-3.6.0"
           / "ho_rmsnorm_16384x4096_b1024_w4_s2.sm90")
ITERATIONS = 4096 // 1024


def load_keys(schedule) -> dict[int, list[str]]:
    """CTA -> its tt.load keys in program order: the first loop's x, then x, w per iteration."""
    return {cta.index: [op.src for ops in cta.roles for op in ops if isinstance(op, GlobalLoad)]
            for cta in schedule.ctas}


def passes(keys: list[str]) -> tuple[list[str], list[str], list[str]]:
    assert len(keys) == 3 * ITERATIONS
    first, second = keys[:ITERATIONS], keys[ITERATIONS:]
    return first, second[0::2], second[1::2]


def edited(tmp_path: Path, old: str, new: str) -> Path:
    """The RMSNorm fixture with one statement replaced (its launch and metadata beside it)."""
    text = RMSNORM.with_name(RMSNORM.name + ".ttgir").read_text()
    assert text.count(old) == 1
    dst = tmp_path / RMSNORM.name
    dst.with_name(dst.name + ".ttgir").write_text(text.replace(old, new))
    for ext in (".json", ".launch.json"):
        dst.with_name(dst.name + ext).write_text(RMSNORM.with_name(RMSNORM.name + ext).read_text())
    return dst.with_name(dst.name + ".ttgir")


def test_the_second_pass_reads_the_first_passs_row_in_every_cta():
    schedule, _ = read(RMSNORM.with_name(RMSNORM.name + ".ttgir"), {"ctas": 8})
    keys = load_keys(schedule)
    rows = set()
    for cta, ks in keys.items():
        first, x_again, w = passes(ks)
        assert x_again == first  # the same 1024 columns of the same row, iteration by iteration
        assert len(set(first)) == ITERATIONS
        assert not set(w) & set(first)  # the weight is another tensor
        rows.add(tuple(first))
    assert len(rows) == len(keys)  # each program its own row
    assert len({tuple(passes(ks)[2]) for ks in keys.values()}) == 1  # w: the same vector in every CTA


def test_the_same_offsets_in_cta_0_alone_do_not_merge(tmp_path):
    """The second loop edited to read ``x[row, :] + row * stride`` -- element ``2 * row * stride +
    col``: the same elements as the first loop's in CTA 0 (row 0), another row in every other CTA.
    Both reads depend on the same per-CTA scalar, so only evaluating them again for other CTAs
    tells them apart."""
    old = "      %x_14 = tt.addptr %x_7, %cols_13 : tensor<1024x!tt.ptr<f16>, #blocked>, tensor<1024xi32, #blocked>"
    new = ("      %cols_w = arith.extsi %cols_13 : tensor<1024xi32, #blocked> to tensor<1024xi64, #blocked>\n"
           "      %rows_b = tt.splat %x_row_3 : i64 -> tensor<1024xi64, #blocked>\n"
           "      %cols_b = arith.addi %cols_w, %rows_b : tensor<1024xi64, #blocked>\n"
           "      %x_14 = tt.addptr %x_7, %cols_b : tensor<1024x!tt.ptr<f16>, #blocked>, tensor<1024xi64, #blocked>")
    schedule, _ = read(edited(tmp_path, old, new), {"ctas": 8})
    for ks in load_keys(schedule).values():
        first, x_again, _ = passes(ks)
        assert not set(x_again) & set(first)

