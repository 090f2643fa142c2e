"""Time the first step (numba compiling the fused loop) of a fresh process:
``BATCHENV_CACHE_DIR= python benchmarks/probe_compile_time.py MiniGrid-DoorKey-8x8-v0``."""
import sys
import time

import numpy as np

import batchenv

envid = sys.argv[1]
env = batchenv.make(envid, 8)
env.reset(seed=0)
t = time.process_time()
env.step(np.zeros(8, dtype=np.int64))
print(envid, f"step compile {time.process_time()-t:.2f} CPU-s")
