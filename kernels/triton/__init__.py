"""Triton scripts run where Triton is installed (the H200 machine's torch ships it): the
second seed's matmul and its variants (:mod:`.fixtures`) and the seeded TTGIR edits
(:mod:`.ttgir_run`).  Inside this package ``import triton`` is still Triton itself
(absolute imports)."""
