"""Static batching: fixed batches, each run to its longest request, as a server without iteration-level scheduling.

Batches of ``max_concurrency`` requests (all, without a cap) in arrival order; a batch starts when its last request
has arrived and the previous batch is done, prefills all its prompts in one step, then decodes every sequence until
the longest is done (finished ones keep their slot), as a server without iteration-level scheduling does (Orca, Yu et
al. OSDI 2022, §2). Requests reach the engine ``request_in_s`` after they are due (no queueing at the API server).
"""

from __future__ import annotations

import math

import numpy as np

from planner.predict.simulator.engine import Engine
from planner.predict.step_time import critical_path, step_features

__all__ = ["StaticBatching"]


class StaticBatching:
    """Static batches of ``engine.cap`` requests over one :class:`~planner.predict.simulator.engine.Engine`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def run(self) -> None:
        """Serve every request, batch after batch (module docstring)."""
        e = self.engine
        r, log, shape, fe = e.requests, e.log, e.shape, e.frontend
        g = len(shape.groups)
        windows = np.array([w.window_tokens or math.inf for w in shape.groups], dtype=float)
        for start in range(0, r.n, e.cap):
            batch = range(start, min(start + e.cap, r.n))
            for j in batch:
                r.sent[j] = r.due[j]
                r.arrival[j] = r.due[j] + fe.in_s + fe.in_per_token_s * float(r.prompt[j])
            log.now = max(log.now, max(r.arrival[j] for j in batch))
            prompts = np.array([r.prompt[j] for j in batch], dtype=float)
            attn = (prompts[:, None] * np.minimum((prompts[:, None] + 1) / 2, windows)).sum(axis=0)
            size = float(len(batch))
            prefill = step_features(
                shape,
                n_decode=np.zeros(1),
                decode_ctx=np.zeros((1, g)),
                prefill_tokens=np.array([prompts.sum()]),
                prefill_attn=attn[None, :],
                n_sampled=np.array([size]),
                n_seqs=np.array([size]),
                allreduce_latency_s=e.allreduce_latency_s,
            )
            log.record_rows(critical_path(prefill, e.coef), size)
            first_step = len(log.ends) - 1
            longest = max(r.out_len[j] for j in batch)
            ends = [log.now]
            if longest > 1:
                steps = np.arange(1, longest)
                ctx = prompts[None, :] + steps[:, None]
                decode = step_features(
                    shape,
                    n_decode=np.full(longest - 1, size),
                    decode_ctx=np.minimum(ctx[..., None], windows).sum(axis=1),
                    allreduce_latency_s=e.allreduce_latency_s,
                )
                ends += log.record_rows(critical_path(decode, e.coef), size * (longest - 1)).tolist()
            for j in batch:
                last = r.out_len[j] - 1
                r.first[j] = ends[0]
                r.first_step[j] = first_step
                r.finish[j] = ends[last]
                r.finish_step[j] = first_step + last
                r.generated[j] = r.out_len[j]
        r.done = r.n
