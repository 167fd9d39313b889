"""kernels/runner/l2_side_map.py's host side: the chase it builds and how it reads a side map."""

from __future__ import annotations

from kernels.runner.l2_side_map import LINE_WORDS, chase_lines, sides_by_lines, sides_by_pass, two_groups


def test_each_target_chases_one_cycle_through_its_own_lines():
    n, targets = 16, 5
    words = chase_lines(targets, n, seed=3)
    for t in range(targets):
        seen, idx = [], t * n
        for _ in range(n):
            seen.append(idx)
            idx = words[idx * LINE_WORDS]
        assert idx == t * n and sorted(seen) == list(range(t * n, (t + 1) * n))  # back at the start after n loads
    assert chase_lines(targets, n, seed=3) == words and chase_lines(targets, n, seed=4) != words


def test_two_groups_splits_at_the_gap():
    gap, label = two_groups([1.0, 1.02, 1.5, 0.99, 1.48])
    assert label == [0, 0, 1, 0, 1] and 0.4 < gap < 0.6


def test_a_first_pass_slower_than_the_second_marks_the_other_side():
    sms = [124, 125, 0, 2, 60, 62]
    first = [300, 300, 300, 300, 420, 430]  # the last two found half the warmer's lines far
    second = [300, 298, 302, 300, 300, 301]
    split = sides_by_pass(sms, first, second)
    assert split["far_from_warmer"] == [60, 62] and split["near_warmer"] == [0, 2, 124, 125]


def test_slow_lines_in_common_group_the_sms():
    side_a = [300 if i % 2 else 450 for i in range(64)]  # the even lines far from side A
    side_b = [450 if i % 2 else 300 for i in range(64)]
    split = sides_by_lines([124, 10, 70, 71], [side_a, side_a, side_b, side_b])
    assert split["with_cta0"] == [10, 124] and split["against_cta0"] == [70, 71]
    assert split["agreement"] == [1.0, 1.0, 0.0, 0.0]
