"""Each rule (kernel function) of BatchPong against its scalar statement."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchenv.envs import pong as P
from batchenv.envs.pong.raster import pixel_layout, render_layout, tile_layout
from batchenv.random import BatchRandom, seed_keys
from batchenv.state import State

PARAMS = P.PongParams()
f32 = np.float32
floats = st.floats(-50, 50, allow_nan=False, width=32)


def make_state(n: int, **fields) -> State:
    s = State(P.BatchPong(1).full_state_dtype, n)
    for name, value in fields.items():
        getattr(s, name)[...] = value
    return s


# The wall and paddle rules applied to a whole state, one after the other: the statement
# of the rules the step applies fused, on one gathered block (see test_fused_event_pass).
def bounce_off_walls(s: State, p: P.PongParams) -> None:
    """A ball past the top or bottom wall is reflected back (reflect_off_walls)."""
    rows = ((s.ball_y < 0) | (s.ball_y > p.top_wall)).nonzero()[0]
    bodies = P.take_fields(s, P.BALL_FIELDS, rows)
    P.reflect_off_walls(bodies, p)
    P.put_fields(s, P.BALL_FIELDS, rows, bodies)


def ball_at_paddle_columns(s: State, p: P.PongParams) -> np.ndarray:
    """Rows whose ball has reached a paddle's plane (x < 1 or x > width-2)."""
    return (s.ball_x < p.left_plane) | (s.ball_x > p.right_plane)


def bounce_off_paddles(s: State, rows: np.ndarray, p: P.PongParams) -> np.ndarray:
    """Of ``rows``, a paddle within reach returns the ball (return_balls); returns the
    rows whose ball was missed."""
    bodies = P.take_fields(s, P.OBS_FIELDS, rows)
    missed = rows[P.return_balls(bodies, p)]
    P.put_fields(s, P.BALL_FIELDS, rows, bodies[:4])
    return missed


def rng_for(n: int, seed: int = 0) -> BatchRandom:
    return BatchRandom(seed_keys(np.arange(n, dtype=np.uint64) + seed),
                       np.zeros(n, dtype=np.uint64))


@given(st.lists(st.tuples(st.floats(2, 27, width=32), st.integers(0, 2)), min_size=1,
                max_size=40))
def test_move_paddle(cases):
    y = np.array([c[0] for c in cases], dtype=np.float32)
    a = np.array([c[1] for c in cases])
    want = [min(max(f32(v) + f32((0, -2, 2)[k]), f32(2)), f32(27)) for v, k in cases]
    P.move_paddle(y, a, PARAMS)
    P.keep_on_court(y, PARAMS)
    assert y.tolist() == [float(w) for w in want]


@given(st.lists(st.tuples(st.floats(2, 27, width=32), st.floats(0, 29, width=32)),
                min_size=1, max_size=40))
def test_track_ball_moves_at_most_cpu_speed_towards_the_ball(cases):
    paddle = np.array([c[0] for c in cases], dtype=np.float32)
    ball = np.array([c[1] for c in cases], dtype=np.float32)
    before = paddle.copy()
    P.track_ball(paddle, ball, PARAMS)
    P.keep_on_court(paddle, PARAMS)
    one = f32(1)
    want = [min(max(f32(p) + min(max(f32(b) - f32(p), -one), one), f32(2)), f32(27))
            for p, b in cases]
    assert paddle.tolist() == [float(w) for w in want]
    step = paddle - before
    assert np.all(np.abs(step) <= 1 + 1e-5)
    assert np.all((paddle >= 2) & (paddle <= 27))
    assert np.all(np.sign(step) * np.sign(ball - before) >= 0)  # towards the ball
    assert np.all(np.abs(ball - paddle) <= np.abs(ball - before) + 1e-5)  # no overshoot


def test_move_ball():
    s = make_state(3, ball_x=[5, 6, 7], ball_y=[1, 2, 3], ball_vx=[1, -1, 1],
                   ball_vy=[0.5, -3, 0])
    P.move_ball(s)
    assert s.ball_x.tolist() == [6, 5, 8] and s.ball_y.tolist() == [1.5, -1, 3]


@given(st.lists(st.tuples(st.floats(-3, 32, width=32), st.floats(-3, 3, width=32)),
                min_size=1, max_size=40))
def test_bounce_off_walls(cases):
    y0 = np.array([c[0] for c in cases], dtype=np.float32)
    vy0 = np.array([c[1] for c in cases], dtype=np.float32)
    s = make_state(len(cases), ball_y=y0, ball_vy=vy0)
    bounce_off_walls(s, PARAMS)
    for i, (y, vy) in enumerate(zip(y0, vy0)):
        if y < 0:
            assert s.ball_y[i] == -y and s.ball_vy[i] == -vy
        elif y > 29:
            assert s.ball_y[i] == f32(58) - y and s.ball_vy[i] == -vy
        else:
            assert s.ball_y[i] == y and s.ball_vy[i] == vy
    inside = (y0 >= -29) & (y0 <= 58)
    assert np.all((s.ball_y[inside] >= 0) & (s.ball_y[inside] <= 29))


def test_ball_at_paddle_columns():
    s = make_state(5, ball_x=[0.5, 1.0, 20, 38.0, 38.5])
    assert ball_at_paddle_columns(s, PARAMS).tolist() == [True, False, False, False, True]


@given(st.lists(st.tuples(st.sampled_from([0.25, 0.0, 38.5, 38.99]), st.floats(0, 29, width=32),
                          st.floats(-3, 3, width=32), st.floats(2, 27, width=32),
                          st.floats(2, 27, width=32)), min_size=1, max_size=30))
def test_bounce_off_paddles(cases):
    """A paddle returns the ball iff |ball_y - centre| <= 2.5: x reflected off the plane,
    vx reversed, vy += 0.5 * offset clipped to +-3; otherwise the row is reported missed and
    left unchanged."""
    x, y, vy, ly, ry = (np.array(c, dtype=np.float32) for c in zip(*cases))
    vx = np.where(x < 1, f32(-1), f32(1))
    s = make_state(len(cases), ball_x=x, ball_y=y, ball_vx=vx, ball_vy=vy, left_y=ly,
                   right_y=ry)
    missed = bounce_off_paddles(s, np.arange(len(cases)), PARAMS)
    for i in range(len(cases)):
        left = x[i] < 1
        offset = y[i] - (ly[i] if left else ry[i])
        if abs(offset) <= 2.5:
            assert i not in missed
            assert s.ball_x[i] == (f32(2) if left else f32(76)) - x[i]
            assert s.ball_vx[i] == -vx[i]
            assert s.ball_vy[i] == min(max(vy[i] + offset * f32(0.5), f32(-3)), f32(3))
            assert abs(s.ball_vy[i]) <= 3
        else:
            assert i in missed
            assert (s.ball_x[i], s.ball_vx[i], s.ball_vy[i]) == (x[i], vx[i], vy[i])


def test_score_points():
    s = make_state(4, ball_x=[0.5, 38.5, 38.5, 0.2], score_left=[0, 20, 3, 0],
                   score_right=[0, 0, 3, 20])
    reward = np.zeros(4, np.float32)
    term = np.zeros(4, bool)
    rows = np.array([0, 1, 3])
    P.score_points(s, rows, s.ball_x[rows] > PARAMS.right_plane, reward, term, PARAMS)
    assert reward.tolist() == [-1, 1, 0, -1]
    assert s.score_left.tolist() == [0, 21, 3, 0]
    assert s.score_right.tolist() == [1, 0, 3, 21]
    assert term.tolist() == [False, True, False, True]


def test_serve_ranges_and_both_sides():
    n = 4000
    s = make_state(n)
    rng = rng_for(n)
    P.serve(s, slice(None), rng, PARAMS)
    assert np.all(s.ball_x == 20)
    assert np.all((s.ball_y >= 7.5) & (s.ball_y <= 22))
    assert set(np.unique(s.ball_vx)) == {-1.0, 1.0}
    assert abs(np.mean(s.ball_vx)) < 0.1
    assert np.all(np.abs(s.ball_vy) <= 1) and np.std(s.ball_vy) > 0.5
    assert np.all(rng.counter == 3)
    # a sparse serve touches only its rows and their streams
    before = s.ball_y.copy()
    rows = np.array([3, 10])
    P.serve(s, rows, rng.at(rows), PARAMS)
    changed = np.flatnonzero(s.ball_y != before)
    assert set(changed) <= {3, 10}
    assert rng.counter[3] == 6 and rng.counter[4] == 3


def test_serve_straight_is_the_seeds_serve():
    n = 1000
    s = make_state(n)
    P.serve_straight(s, slice(None), rng_for(n), PARAMS)
    assert np.all(s.ball_x == 20) and np.all(s.ball_y == 14.5) and np.all(s.ball_vy == 0)
    assert 400 < np.sum(s.ball_vx == 1) < 600 and np.all(np.abs(s.ball_vx) == 1)


def test_end_rally():
    reward = np.ones(3, np.float32)
    term = np.zeros(3, bool)
    P.end_rally(np.array([1]), reward, term)
    assert reward.tolist() == [1, 0, 1] and term.tolist() == [False, True, False]


def test_sticky_draw_frequency():
    fresh = P.sticky_draw(rng_for(20000), 0.25, 2)
    assert fresh.shape == (20000, 2)
    assert abs(1 - fresh.mean() - 0.25) < 0.01


def test_params_validation():
    with pytest.raises(ValueError):
        P.PongParams(ball_speed=1.5)
    with pytest.raises(ValueError):
        P.PongParams(paddle_height=40)
    with pytest.raises(ValueError):
        P.PongParams(points_to_win=0)


# ---------------------------------------------------------------- image geometry
def test_tile_layout_is_nearest_cell():
    lay = tile_layout(30, 40, 5)
    ay, by = lay.ball_y_coef
    assert (ay, by) == (1, 0.5)  # trunc(y + 0.5): the cell nearest the centre
    py, pb = lay.paddle_y_coef
    assert (py, pb) == (1, -1.5)  # a 5-cell paddle centred at c covers rows round(c)-2..+2
    assert lay.paddle_cols == (0, 39) and lay.court_top == 0 and lay.court_rows == 30


@pytest.mark.parametrize("shape", [(84, 84), (60, 96), (210, 160), (42, 42)])
def test_pixel_layout_boxes_stay_in_the_court(shape):
    lay = pixel_layout((30, 40), 5, shape)
    assert lay.court_top >= 1 and lay.court_top + lay.court_rows == shape[0] - lay.court_top
    lo, hi = lay.ball_rows
    assert lo == lay.court_top and hi + lay.ball_size[0] == lay.court_top + lay.court_rows
    # the ball in columns 1..width-2 never overlaps a paddle's columns
    ax, bx = lay.ball_x_coef
    left_end = lay.paddle_cols[0] + lay.paddle_size[1]
    assert int(f32(1) * ax + bx) >= left_end
    assert int(f32(38) * ax + bx) + lay.ball_size[1] <= lay.paddle_cols[1]


def test_render_layout():
    lay = render_layout((30, 40), 5, 8)
    assert (lay.height, lay.width) == (256, 320)
    assert lay.ball_size == (8, 8) and lay.paddle_size == (40, 8)
    assert lay.paddle_cols == (0, 312)


def test_tile_images_lays_frames_out_in_order():
    frames = np.arange(5 * 2 * 3 * 1, dtype=np.uint8).reshape(5, 2, 3, 1) + 1
    grid = P.tile_images(frames, cols=2, gap=1)
    assert grid.shape == (3 * 2 + 2, 2 * 3 + 1, 1)
    for k in range(5):
        r, c = divmod(k, 2)
        np.testing.assert_array_equal(grid[r * 3:r * 3 + 2, c * 4:c * 4 + 3], frames[k])
    assert np.all(grid[2::3] == 0) and np.all(grid[:, 3] == 0)
    np.testing.assert_array_equal(grid[6:8, 4:7], 0)  # the empty sixth cell


def test_ball_off_court_is_walls_or_paddle_planes():
    s = make_state(6, ball_x=[20, 0.5, 38.5, 20, 20, 1.0], ball_y=[10, 10, 10, -0.5, 29.5, 29])
    assert P.ball_off_court(s, PARAMS).tolist() == [1, 2, 3, 4]


@given(st.lists(st.tuples(st.floats(0, 39, width=32), st.floats(-3, 32, width=32),
                          st.floats(-3, 3, width=32), st.floats(2, 27, width=32),
                          st.floats(2, 27, width=32)), min_size=1, max_size=30))
def test_fused_event_pass_equals_the_two_rules(cases):
    """reflect_off_walls + return_balls on one gathered block (the step's path) ==
    bounce_off_walls then bounce_off_paddles on the state (the rules one after the other)."""
    x, y, vy, ly, ry = (np.array(c, dtype=np.float32) for c in zip(*cases))
    fields = dict(ball_x=x, ball_y=y, ball_vx=np.where(x < 20, f32(-1), f32(1)), ball_vy=vy,
                  left_y=ly, right_y=ry)
    a, b = make_state(len(cases), **fields), make_state(len(cases), **fields)
    bounce_off_walls(a, PARAMS)
    missed_a = bounce_off_paddles(a, ball_at_paddle_columns(a, PARAMS).nonzero()[0],
                                    PARAMS)
    rows = P.ball_off_court(b, PARAMS)
    bodies = P.take_fields(b, P.OBS_FIELDS, rows)
    P.reflect_off_walls(bodies, PARAMS)
    missed_b = rows[P.return_balls(bodies, PARAMS)]
    P.put_fields(b, P.BALL_FIELDS, rows, bodies[:4])
    assert missed_a.tolist() == missed_b.tolist()
    for name in ("ball_x", "ball_y", "ball_vx", "ball_vy"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
