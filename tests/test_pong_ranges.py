"""BatchPong's valid states (its schema's ``Range``\\ s: the court and the rules' bounds,
``BatchPong.params``), fuzzed in every mode and observation type: random states inside
them, a quarter of the values at a bound, step alike in the numpy kernels and the compiled
per-env kernels (bit-equal, docs/pong.md), without an error, to states inside them again;
a value just past any bound (the next float32, the next integer), NaN or inf is refused by
``set_state`` naming the field, the range and the env, and changes nothing."""

from __future__ import annotations

import re

import numpy as np
import pytest

from batchenv import BatchPong
from batchenv.validation import outside_ranges

pytest.importorskip("numba")

N = 64
STEPS = 4
CONFIGS = {
    "cpu-state": {},
    "two_player-pixels-first": {"mode": "two_player", "obs_type": "pixels",
                                "pixel_shape": (42, 42), "channel_axis": "first"},
    "cpu-tiles": {"obs_type": "tiles"},
    "rally-frameskip-sticky": {"mode": "rally", "frameskip": 2,
                               "repeat_action_probability": 0.25},
    "two_player-tiles": {"mode": "two_player", "obs_type": "tiles"},
}
#: README's command runs the configurations whose compiled loop it compiles anyway (the
#: types of tests/test_pong_per_env.py's FAST); the others, each another compile of the
#: loop, run in the `slow` pass.
CONFIG_PARAMS = [pytest.param(name, marks=[] if name in ("cpu-state", "two_player-pixels-first")
                              else [pytest.mark.slow]) for name in CONFIGS]


def _bounds(env, name):
    low, high = env.state_field_ranges[name].resolve(env)
    return np.asarray(low).astype(env.full_state_dtype[name]), \
        np.asarray(high).astype(env.full_state_dtype[name])


def inside(env, rng, at_bounds=0.25):
    """``N`` records with every ranged field drawn inside its range (a fraction at a
    bound), one env in ten awaiting its reset."""
    env.reset(seed=int(rng.integers(1 << 30)))
    st = env.get_state()
    for name in env.state_field_ranges:
        low, high = _bounds(env, name)
        if st[name].dtype.kind == "f":
            values = rng.uniform(float(low), float(high), N).astype(st[name].dtype)
            values = np.clip(values, low, high)
        else:
            values = rng.integers(int(low), int(high) + 1, N)
        edge = rng.random(N) < at_bounds
        values[edge] = np.where(rng.random(np.count_nonzero(edge)) < 0.5, low, high)
        st[name] = values
    st["awaiting_reset"] = rng.random(N) < 0.1
    p = env.params
    won = np.maximum(st["score_left"], st["score_right"]) >= p.points_to_win
    off = (st["ball_x"] < p.left_plane) | (st["ball_x"] > p.right_plane)
    st["awaiting_reset"] |= won | off  # (check_state: a game's final state awaits its reset)
    assert not outside_ranges(env, st) and not any(map(np.any, env.check_state(st).values()))
    return st


def test_every_field_has_a_range():
    env = BatchPong(4)
    assert set(env.state_field_ranges) == set(env.state_dtype.names)
    assert _bounds(env, "ball_x") == (0, 39) and _bounds(env, "ball_vy") == (-3, 3)


@pytest.mark.parametrize("config", CONFIG_PARAMS)
def test_states_inside_the_ranges_step_alike_in_both_forms_and_stay_inside(config):
    kw = CONFIGS[config]
    numpy_form, compiled = BatchPong(N, kernels="numpy", **kw), BatchPong(N, kernels="numba",
                                                                         **kw)
    rng = np.random.default_rng(sorted(CONFIGS).index(config))
    for _ in range(2):
        st = inside(numpy_form, rng)
        np.testing.assert_array_equal(numpy_form.set_state(st), compiled.set_state(st))
        for t in range(STEPS):
            actions = numpy_form.action_space.sample()
            a, b = numpy_form.step(actions), compiled.step(actions)
            for what, x, y in zip(("obs", "reward", "terminated", "truncated"), a, b):
                np.testing.assert_array_equal(x, y, err_msg=f"step {t}: {what}")
            state = numpy_form.get_state()
            np.testing.assert_array_equal(state, compiled.get_state(), err_msg=f"step {t}")
            assert not outside_ranges(numpy_form, state), (t, outside_ranges(numpy_form,
                                                                              state))


def _past(value, dtype, direction):
    if np.dtype(dtype).kind == "f":
        return np.nextafter(np.asarray(value, dtype), np.asarray(direction, dtype))
    return value + (1 if direction > 0 else -1)


@pytest.mark.parametrize("kernels", ["numpy", "numba"])
def test_a_value_just_past_any_bound_or_not_finite_is_refused(kernels):
    env = BatchPong(N, kernels=kernels, **CONFIGS["two_player-pixels-first"])
    rng = np.random.default_rng(5)
    st = inside(env, rng)
    env.set_state(st)
    before = env.get_state()
    checked = 0
    for name in env.state_field_ranges:
        dtype = env.full_state_dtype[name]
        low, high = _bounds(env, name)
        bad_values = [_past(low, dtype, -np.inf), _past(high, dtype, np.inf)]
        if dtype.kind == "f":
            bad_values += [np.nan, np.inf, -np.inf]
        for value in bad_values:
            bad = st.copy()
            k = int(rng.integers(N))
            bad[name][k] = value
            with pytest.raises(ValueError) as caught:
                env.set_state(bad)
            message = str(caught.value)
            assert re.search(rf"'?{name}'?[^;]* at env indices \[{k}\]", message), message
            if np.isfinite(value):
                assert f"outside [{float(low):g}, {float(high):g}]" in message, message
            np.testing.assert_array_equal(env.get_state(), before, err_msg=name)
            checked += 1
    assert checked == 2 * len(env.state_field_ranges) + 3 * 6  # six float fields


@pytest.mark.parametrize("field, value, problem", [
    ("score_right", 21, "a score of points_to_win=21 in a game not awaiting its reset"),
    ("ball_x", 0.5, r"ball_x outside \[1, 38\] in a game not awaiting its reset"),
    ("ball_x", 38.5, r"ball_x outside \[1, 38\] in a game not awaiting its reset"),
])
def test_a_final_state_not_awaiting_its_reset_is_refused(field, value, problem):
    """A won game, or a ball past a paddle, is only a game's final state (inside the
    ranges: the step that ends a game leaves it so); stepped again it could leave them."""
    env = BatchPong(N)
    st = inside(env, np.random.default_rng(7))
    env.set_state(st)
    before = env.get_state()
    k = int(np.flatnonzero(~st["awaiting_reset"])[0])
    st[field][k] = value
    with pytest.raises(ValueError, match=rf"{problem} at env indices \[{k}\]"):
        env.set_state(st)
    np.testing.assert_array_equal(env.get_state(), before)
    st["awaiting_reset"][k] = True  # as the final state it is: taken
    env.set_state(st)


@pytest.mark.slow
@pytest.mark.parametrize("config", list(CONFIGS))
def test_many_states_at_the_bounds_step_without_error_in_every_form(config):
    """The long fuzz: mostly values at a bound, in the Python form and the checked form
    too (compiled with bounds checks: an index past an array is an error there, where the
    plain compiled loop would write into memory it does not own; debug mode also checks
    the ranges after every step)."""
    kw = CONFIGS[config]
    forms = [BatchPong(N, kernels=k, **kw) for k in ("numpy", "numba", "python")]
    forms.append(BatchPong(N, kernels="numba", debug=True, **kw))
    rng = np.random.default_rng(11)
    for _ in range(20):
        st = inside(forms[0], rng, at_bounds=0.75)
        for env in forms:
            env.set_state(st)
        for _ in range(STEPS):
            actions = forms[0].action_space.sample()
            outs = [env.step(actions) for env in forms]
            for out in outs[1:]:
                for x, y in zip(outs[0][:4], out[:4]):
                    np.testing.assert_array_equal(x, y)
            assert not outside_ranges(forms[0], forms[0].get_state())
