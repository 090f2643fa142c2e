# The call of one class's compiled loop for a batch of one, through a table of pointers:
# batchenv._one fills in this file's three placeholders for one argument tuple, runs it
# (as batchenv._loops runs _loops_template.py), compiles `one` as a numba.cfunc and calls
# it with ctypes. `run`, the class's compiled loop (`run` of _loops_template.py), is set as
# a global beforehand.
#
# `tab` is the table of the arguments' data pointers, in run's order (a scalar: the pointer
# of a one-element array holding it). Each placeholder is a tuple of those arguments, each
# remade over its memory with the shape, dtype and C layout numba's dispatcher would have
# typed it as, so `run` is the same machine code:
#
#   PARAMS   p's values        an array:  numba.carray(tab[k], shape, np.<dtype>)
#   FIELDS   s's arrays        a scalar:  numba.carray(tab[k], (1,), np.<dtype>)[0]
#   REST     run's other arguments: op, chosen, action, low, high, reward, terminated,
#            truncated, obs, mode, max_steps, check, lo, hi
#
# The shapes and dtypes are constants of the compiled code: the cached copy of this file is
# named after a hash of the filled text (batchenv/_one.py). It is a template, not a module
# of the package: nothing imports it.
# ruff: noqa: F401, F821

import numba
import numpy as np


def one(tab):
    return run(PARAMS, FIELDS, *REST)
