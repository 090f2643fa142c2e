"""Gymnasium's classic-control envs, batched: one module per env, plus what they share
(:mod:`._classic`: parameters, row-wise resets, observation writes; :mod:`._render`:
Gymnasium's drawings)."""
