#!/usr/bin/env python3
"""Writes conversation.csv: a synthetic chat trace for llm_trace_replay/replay.orr.

Arrivals: Poisson at 12 requests/s for 120 s. Tokens: lognormal, shaped like published
conversation traces (most prompts short, a long tail; Azure LLM inference trace 2023,
"conv": median prompt ~1k tokens, long tail to 8k): prompt median 700, sigma 1.0, clipped
to 1..8192; output median 180, sigma 0.8, clipped to 1..1024. Seeded: rerunning gives the
same file. Python's standard library only.
"""
import math
import random

rng = random.Random(20261202)
t, rows = 0.0, []
while True:
    t += rng.expovariate(12.0)
    if t > 120.0:
        break
    p = min(8192, max(1, round(rng.lognormvariate(math.log(700), 1.0))))
    o = min(1024, max(1, round(rng.lognormvariate(math.log(180), 0.8))))
    rows.append((t, p, o))
with open("conversation.csv", "w") as f:
    f.write("# Synthetic chat trace, written by make_trace.py (seeded; see its docstring).\n")
    f.write("arrival_s,prompt_tokens,output_tokens\n")
    for t, p, o in rows:
        f.write(f"{t:.6f},{p},{o}\n")
print(len(rows), "rows; mean prompt", sum(r[1] for r in rows) / len(rows),
      "mean output", sum(r[2] for r in rows) / len(rows),
      "max prompt", max(r[1] for r in rows), "max output", max(r[2] for r in rows))
