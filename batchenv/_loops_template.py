# The batch loop around one env class's per-env kernels: batchenv._loops runs this file once
# per class (compiled by numba, or as plain Python), with these globals set beforehand:
#
#   reset_env, step_env, observe_env   the class's kernels (compiled: inlined into the loop)
#   StateTuple, ParamTuple             the namedtuple classes of `s` and `p`
#   inner, outer                       the decorators of env_op (and its steps) and run
#                                      (njit or nothing)
#   borrow, borrow_all                 views of the caller's arrays that the compiled loop
#                                      reads and writes without reference counting
#   first_bad_action                   the actions' range check
#
# It is a template, not a module of the package: nothing imports it. Compiled with a cache
# directory, a copy named after a hash of everything the machine code depends on is what
# numba caches (batchenv/_loop_cache.py).
# ruff: noqa: F821

@inner
def env_op(p, s, i, op, chosen, action, reward, terminated, truncated, obs, mode,
           max_steps):
    # One env's part of `op` (see run). Each kernel has one call site for every op: numba
    # inlines every call site, so fewer sites compile faster.
    steps = op == 0 or op == 3
    r, t, tr = 0.0, False, False
    restart = (op == 1 or op == 4) and chosen[i]
    if steps:
        if s.awaiting_reset[i]:  # its episode is over: the action is ignored; NEXT_STEP
            restart = op == 0 and mode != 2  # (and SAME_STEP, for a row set awaiting by
        else:  # set_state) resets it now, DISABLED keeps it frozen; op 3 discards it
            r, t, tr = step_one(p, s, i, action[i], op == 0, max_steps)
    if restart:
        restart_one(p, s, i, op != 1)
    if steps:
        reward[i] = r
        terminated[i] = t
        truncated[i] = tr
    if op == 0 or op == 2 or (op == 4 and chosen[i]):
        observe_env(p, s, i, obs[i])


@inner
def step_one(p, s, i, a, whole, max_steps):
    # step_env; in the whole step (op 0) also the time limit, and the episode's end marked
    # for the auto-reset. Returns the reward and the two flags.
    r, t = step_env(p, s, i, a)
    tr = False
    if whole:
        elapsed = s.elapsed_steps[i] + 1
        s.elapsed_steps[i] = elapsed
        tr = elapsed >= max_steps  # (no time limit: max_steps is 2**62)
        if t or tr:  # (SAME_STEP: observed as it ends, reset by op 4 after)
            s.awaiting_reset[i] = True
    return r, t, tr


@inner
def restart_one(p, s, i, new_episode):
    # reset_env; a new episode (every op but 1, the numpy form's reset, whose caller keeps
    # the counters) also starts its step count and is no longer awaiting a reset.
    reset_env(p, s, i)
    if new_episode:
        s.elapsed_steps[i] = 0
        s.awaiting_reset[i] = False


@outer
def run(params, fields, op, chosen, action, low, high, reward, terminated, truncated, obs,
        mode, max_steps, check, lo, hi):
    # Rows [lo, hi) of the batch, one env's pass at a time.
    # op 0: the whole step, base class included (step_env, the time limit, the flags,
    #   auto-reset in `mode`: 0 NEXT_STEP, 1 SAME_STEP, 2 DISABLED; observe_env into obs);
    # op 4: SAME_STEP's new episodes after it (the rows where `chosen`: reset, observed);
    # the numpy-form kernels, for the base class's other calls and debug mode:
    # op 1 reset_envs / reset_rows (the rows where `chosen`), 2 observe, 3 step_envs.
    # check 1: every action's range is checked before any row changes (a refusal changes
    # nothing); returns the first bad row, or -1 after the pass. check 2: only checks.
    if check:
        bad = first_bad_action(action, low, high, lo, hi)
        if bad >= 0 or check == 2:
            return bad
    p = ParamTuple(*borrow_all(params))
    s = StateTuple(*borrow_all(fields))
    chosen = borrow(chosen)
    action = borrow(action)
    reward = borrow(reward)
    terminated = borrow(terminated)
    truncated = borrow(truncated)
    obs = borrow(obs)
    for i in range(lo, hi):
        if i >= 0:  # (always: it tells the compiler so, and s.x[i] then skips numba's
            # wraparound of negative indices, a load and two operations per access)
            env_op(p, s, i, op, chosen, action, reward, terminated, truncated, obs, mode,
                   max_steps)
    return -1
