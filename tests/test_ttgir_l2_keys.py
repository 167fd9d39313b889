"""Which global data a read is: the L2 model's key for a TTGIR kernel's copies (``Walker.global_key``).

The reader walks one CTA and replays its ops in every CTA.  Its reads were keyed by the buffer
and the copy's number alone, so every CTA's k-th copy of B was "the same data": a decode GEMM
streaming a 128 MB weight (each CTA its own slice) replayed as L2 hits, 1.4x faster than the H200
ran it (``kernels/triton/heldout.py``'s ``skinny_linear_kernel``).  Now a read whose address
depends on the program id carries the values of the per-CTA scalars it is computed from, each
CTA its own; a TMA load is keyed by its descriptor and coordinates.  The sharing asserted below
is computed here from the kernels' sources (the tutorial's grouped ordering, the grid), not
read from the reader."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import replay
from protosim.frontends.ttgir import TtgirError, read
from protosim.ir import CpAsync, GlobalLoad, TmaLoad

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triton"
CORPUS = FIXTURES / "corpus" / "triton-3.6.0"
HELDOUT = FIXTURES / "heldout" / "triton-3.6.0"


def reads(schedule, buffer_prefix: str) -> dict[int, tuple[str, ...]]:
    """CTA -> the keys of its global reads into buffers named ``buffer_prefix...``, in order."""
    out = {}
    for cta in schedule.ctas:
        out[cta.index] = tuple(op.src or op.dst.content for ops in cta.roles for op in ops
                               if isinstance(op, (CpAsync, TmaLoad)) and op.dst.buffer.startswith(buffer_prefix)
                               and not getattr(op, "zero_fill", False))
    return out


def sharing(keys: dict[int, tuple[str, ...]]) -> set[frozenset[int]]:
    """The CTAs that read exactly the same data, as groups."""
    groups: dict[tuple[str, ...], set[int]] = defaultdict(set)
    for cta, ks in keys.items():
        groups[ks].add(cta)
    return {frozenset(g) for g in groups.values()}


def grouped(pid: int, m: int, n: int, bm: int, bn: int, group_m: int) -> tuple[int, int]:
    """Triton tutorial 03's grouped program order (kernels/triton/corpus.py _grouped_pid)."""
    num_pid_m, num_pid_n = -(-m // bm), -(-n // bn)
    in_group = group_m * num_pid_n
    first = pid // in_group * group_m
    size = min(num_pid_m - first, group_m)
    return first + (pid % in_group) % size, (pid % in_group) // size


def test_a_grouped_gemms_ctas_share_a_panels_by_row_and_b_panels_by_column():
    schedule, _ = read(CORPUS / "mm_ptr_128x128x64_s3_w8.sm90.ttgir", {"ctas": 64})  # M = N = 2048, 128 x 128 tiles
    tiles = {c: grouped(c, 2048, 2048, 128, 128, 8) for c in range(64)}
    by_row = {frozenset(c for c in tiles if tiles[c][0] == m) for m in {t[0] for t in tiles.values()}}
    by_col = {frozenset(c for c in tiles if tiles[c][1] == n) for n in {t[1] for t in tiles.values()}}
    assert sharing(reads(schedule, "a")) == by_row
    assert sharing(reads(schedule, "b")) == by_col


def test_a_two_dimensional_grid_gives_each_cta_its_program_ids():
    """grid_512: grid [8, 8], pid_m = program_id(0), pid_n = program_id(1)."""
    schedule, _ = read(FIXTURES / "grid_512_k512_s3.sm90.ttgir")
    assert len(schedule.ctas) == 64
    assert sharing(reads(schedule, "a")) == {frozenset(c for c in range(64) if c % 8 == m) for m in range(8)}
    assert sharing(reads(schedule, "b")) == {frozenset(c for c in range(64) if c // 8 == n) for n in range(8)}


def test_attention_reads_one_heads_k_and_v_in_every_q_block_of_that_head():
    """grid [N_CTX / 128, Z_H]: the CTAs of one head (program_id(1)) read the same K and V."""
    schedule, _ = read(CORPUS / "attn_tma_d64_128x64_s3_w4.sm90.ttgir", {"ctas": 32})  # 4 heads of 8 Q blocks
    heads = {frozenset(c for c in range(32) if c // 8 == h) for h in range(4)}
    assert sharing(reads(schedule, "k")) == heads
    assert sharing(reads(schedule, "v")) == heads
    assert len(sharing(reads(schedule, "q"))) == 32  # each Q block its own


def test_a_persistent_kernels_ctas_share_a_tile_whenever_they_read_it():
    """Each CTA walks its own tiles (tile = pid, pid + 132, ... of 16 x 16, grouped order): the
    key is the tile itself -- ``a_desc[row, k]`` -- so the A panel of a tile row is one set of
    keys, read by every CTA that computes a tile of that row, at whatever point of its loop."""
    schedule, _ = read(CORPUS / "mm_persist_tmastore_128x128x64_s3_w4.sm90.ttgir")  # 2048 x 2048 x 1024
    a = reads(schedule, "a")
    assert len(a) == 132
    for c in (0, 1, 67, 131):
        rows = [grouped(t, 2048, 2048, 128, 128, 8)[0] for t in range(c, 256, 132)]
        assert a[c] == tuple(f"a_desc[{128 * m},{64 * k}]" for m in rows for k in range(16))
    readers = defaultdict(set)
    for c, ks in a.items():
        for k in ks:
            readers[k].add(c)
    assert max(len(r) for r in readers.values()) > 8  # a row's A panel, shared across CTAs


def test_a_decode_gemm_streams_its_weight_from_dram():
    """16 x 8192 x 8192, W 128 MB: every CTA reads its own 64 rows of W, X is read by all."""
    path = HELDOUT / "ho_skinny_m16_16x8192x8192_16x64x128_w4_s4.sm90.ttgir"
    schedule, _ = read(path, {"ctas": 16})
    assert len(sharing(reads(schedule, "w"))) == 16
    assert len(sharing(reads(schedule, "x"))) == 1
    whole, _ = read(path)
    result = replay(whole)
    h200 = load_profile("h200")
    weight = 8192 * 8192 * 2
    assert result.stats.l2_misses > 0.9 * weight / (64 * 128 * 2)  # the W tiles miss
    assert result.end_cycle >= weight / h200.hbm_bytes_per_clk  # no faster than HBM can deliver W


def test_fewer_ctas_than_the_grid_take_its_first_ctas_more_are_refused():
    schedule, _ = read(CORPUS / "attn_tma_d64_128x64_s3_w4.sm90.ttgir", {"ctas": 9})
    assert len(schedule.ctas) == 9
    with pytest.raises(TtgirError, match="grid"):
        read(CORPUS / "attn_tma_d64_128x64_s3_w4.sm90.ttgir", {"ctas": 129})


HELDOUT2 = FIXTURES / "heldout2" / "triton-3.6.0"


def load_keys(schedule, site: str) -> dict[int, str]:
    """CTA -> the key of its register load of value ``site`` (``bias_12@0|...`` is ``bias``'s)."""
    return {cta.index: op.src for cta in schedule.ctas for ops in cta.roles for op in ops
            if isinstance(op, GlobalLoad) and op.src.split("@")[0].rsplit("_", 1)[0] == site}


def element_sets(ctas: int, block: int, index) -> dict[int, frozenset[int]]:
    """CTA -> the elements its load touches, from the kernel's source: ``index(offs)`` for
    ``offs = pid * BLOCK + arange(BLOCK)``."""
    return {c: frozenset(index(c * block + i) for i in range(block)) for c in range(ctas)}


def groups_of(by_cta: dict) -> set[frozenset[int]]:
    out: dict = defaultdict(set)
    for cta, v in by_cta.items():
        out[v].add(cta)
    return {frozenset(g) for g in out.values()}


@pytest.mark.parametrize("name, n, block", [("h2_bias_gelu_8192x8192_b1024_w4", 8192, 1024),
                                            ("h2_bias_gelu_4096x11008_b4096_w8", 11008, 4096)])
def test_a_read_through_a_remainder_is_shared_by_the_ctas_that_read_the_same_elements(name, n, block):
    """``bias[offs % N]``: the bias is 16-22 KB, read by every CTA; CTAs whose offsets agree
    modulo N read the same bias elements.  Keyed by the per-CTA offset alone, 65,536 CTAs read
    128 MB of bias (held-out set 2).  The grouping must be exactly the elements' -- no two CTAs
    that read different elements share a key -- while x stays each CTA's own."""
    ctas = 96
    schedule, _ = read(HELDOUT2 / f"{name}.sm90.ttgir", {"ctas": ctas})
    want = groups_of(element_sets(ctas, block, lambda e: e % n))
    assert len(want) < ctas  # the source does share (else the test says nothing)
    assert groups_of(load_keys(schedule, "bias")) == want
    assert len(set(load_keys(schedule, "x").values())) == ctas


def test_a_remainder_after_a_division_keys_each_cta_apart(tmp_path):
    """``(offs / 2) % N`` is not fixed by ``offs % N``: a division between the per-CTA offset and
    the remainder must drop the modulus (keys then over-distinguish, never merge different data).
    The bias kernel hand-edited to read ``bias[(offs / 2) % N]``."""
    src = HELDOUT2 / "h2_bias_gelu_8192x8192_b1024_w4.sm90"
    text = src.with_suffix(".sm90.ttgir").read_text()
    old = "    %col_7 = arith.remsi %offs_5, %col : tensor<1024xi32, #blocked> loc(#loc35)\n"
    assert old in text
    text = text.replace(old, "    %two = arith.constant dense<2> : tensor<1024xi32, #blocked> loc(#loc35)\n"
                             "    %half = arith.divsi %offs_5, %two : tensor<1024xi32, #blocked> loc(#loc35)\n"
                             "    %col_7 = arith.remsi %half, %col : tensor<1024xi32, #blocked> loc(#loc35)\n")
    dst = tmp_path / "halved.sm90"
    dst.with_suffix(".sm90.ttgir").write_text(text)
    for ext in (".json", ".launch.json"):
        dst.with_name(dst.name + ext).write_text(src.with_name(src.name + ext).read_text())
    ctas = 48
    schedule, _ = read(dst.with_suffix(".sm90.ttgir"), {"ctas": ctas})
    keys = load_keys(schedule, "bias")
    elements = element_sets(ctas, 1024, lambda e: (e // 2) % 8192)
    for a in range(ctas):
        for b in range(a):
            if keys[a] == keys[b]:
                assert elements[a] == elements[b], (a, b, keys[a])
