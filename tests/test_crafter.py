"""BatchCrafter against the ``crafter`` package (1.8.3): data, noise, worlds, steps and
images equal for the same states and draws (the harness: ``tests/crafter_parity.py``), the
observations, the info, reproducibility, and what happens without ``crafter``."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

crafter = pytest.importorskip("crafter")  # the test extra pins it (batchenv[crafter])

import crafter_parity as cp  # noqa: E402
import crafter_stats as stats  # noqa: E402
from crafter import objects  # noqa: E402

from batchenv.envs.crafter import BatchCrafter, data, noise, render  # noqa: E402
from batchenv.envs.crafter.rules import DAYLIGHT  # noqa: E402
from batchenv.random import seed_keys  # noqa: E402

N = 4  # envs of the compiled parity runs


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def pixels() -> BatchCrafter:
    """The compiled env the parity runs share (one compile for the module), autoreset
    Disabled: a finished env stays as it ended."""
    return BatchCrafter(N, autoreset_mode="Disabled")


def new_references(env: BatchCrafter, seed: int) -> list[cp.Reference]:
    """``env.reset(seed=seed)`` and a crafter reference per env made from the same words:
    their worlds are compared (every field, the image, the words taken)."""
    obs, _ = env.reset(seed=seed)
    st = env.get_state()
    refs = []
    for i in range(env.num_envs):
        ref = cp.reference()
        robs = cp.reset_like(ref, int(st["rng_key"][i]))
        assert ref.stand.taken == st["rng_counter"][i], "world generation drew differently"
        cp.assert_same(st[i], cp.record_of(ref, env.full_state_dtype), f"world {i}")
        np.testing.assert_array_equal(obs[i], robs, err_msg=f"world {i}: first image")
        refs.append(ref)
    return refs


def inject(env: BatchCrafter, refs: list[cp.Reference], seed: int) -> np.ndarray:
    """Write the references' games into the env's rows (streams keyed from ``seed``);
    returns the observations."""
    keys = seed_keys(np.arange(seed, seed + env.num_envs))
    records = np.stack([cp.record_of(ref, env.full_state_dtype, int(keys[i]), 0)
                        for i, ref in enumerate(refs)])
    records["elapsed_steps"] = [ref._step for ref in refs]
    return env.set_state(records)


def random_actions(seed: int, n: int, weights=None):
    rng = np.random.default_rng(seed)
    p = None if weights is None else np.asarray(weights, float) / np.sum(weights)
    return lambda t: rng.choice(17, size=n, p=p)


# ----------------------------------------------------------------------------- data
def test_data_is_crafters():
    """Every table of batchenv/envs/crafter/data.py equals crafter's data.yaml."""
    c = crafter.constants
    assert list(data.MATERIALS[1:]) == c.materials
    assert list(data.ITEMS) == list(c.items)
    assert list(data.ACTIONS) == c.actions
    assert list(data.ACHIEVEMENTS) == sorted(c.achievements)
    assert [c.items[k]["initial"] for k in data.ITEMS] == data.ITEM_INITIAL.tolist()
    assert {c.items[k]["max"] for k in data.ITEMS} == {data.ITEM_MAX}
    walk = {m: data.MATERIALS.index(m) for m in data.MATERIALS}
    assert sorted(np.flatnonzero(data.WALKABLE)) == sorted(walk[m] for m in c.walkable)
    for name, rule in c.collect.items():
        m = walk[name]
        need = list(rule["require"].items())
        assert data.COLLECT_NEEDS[m] == (data.ITEMS.index(need[0][0]) if need else -1)
        assert data.COLLECT_NEEDS_AMOUNT[m] == (need[0][1] if need else 0)
        (item, amount), = rule["receive"].items()
        assert (data.ITEMS[data.COLLECT_GIVES[m]], amount) == (item, 1)
        assert data.MATERIALS[data.COLLECT_LEAVES[m]] == rule["leaves"]
        assert data.COLLECT_PROB[m] == rule.get("probability", 1)
        assert data.ACHIEVEMENTS[data.COLLECT_ACHIEVEMENT[m]] == f"collect_{item}"
    assert (data.COLLECT_GIVES >= 0).sum() == len(c.collect)
    for k, (name, rule) in enumerate(c.place.items()):
        (item, amount), = rule["uses"].items()
        assert (data.ITEMS[data.PLACE_USES[k]], data.PLACE_AMOUNT[k]) == (item, amount)
        assert sorted(np.flatnonzero(data.PLACE_WHERE[k])) == sorted(walk[m] for m in
                                                                     rule["where"])
        made = data.PLACE_MATERIAL[k]
        assert (data.MATERIALS[made] if made >= 0 else "object", rule["type"]) in (
            (name, "material"), ("object", "object"))
        assert data.ACHIEVEMENTS[data.PLACE_ACHIEVEMENT[k]] == f"place_{name}"
        assert data.ACTIONS[data.PLACE_STONE + k] == f"place_{name}"
    for k, (name, rule) in enumerate(c.make.items()):
        uses = {data.ITEMS[item]: int(n) for item, n in zip(data.MAKE_USED_ITEMS,
                                                             data.MAKE_USES[k]) if n}
        assert uses == rule["uses"]
        assert rule["nearby"] == (["table", "furnace"] if data.MAKE_NEEDS_FURNACE[k]
                                  else ["table"])
        assert (data.ITEMS[data.MAKE_GIVES[k]], rule["gives"]) == (name, 1)
        assert data.ACHIEVEMENTS[data.MAKE_ACHIEVEMENT[k]] == f"make_{name}"
        assert data.ACTIONS[data.MAKE_WOOD_PICKAXE + k] == f"make_{name}"


def test_daylight_is_crafters():
    """DAYLIGHT[step] is ``Env._update_time``'s daylight at every step up to the length."""
    env = crafter.Env()
    for step in range(0, 10001, 7):
        env._step = step
        env._update_time()
        assert DAYLIGHT[step] == env._world.daylight


# ----------------------------------------------------------------------------- noise
def test_noise3_equals_opensimplex():
    """init_perm is opensimplex's permutation, noise3 its value, bit for bit, for seeds
    across the range crafter draws (0 to 2**31 - 2) and points as worldgen asks for them."""
    from opensimplex import OpenSimplex
    from opensimplex.internals import _init

    rng = np.random.default_rng(0)
    for seed in [0, 1, 2**31 - 2, *rng.integers(0, 2**31 - 1, 8).tolist()]:
        perm = np.zeros(256, np.uint8)
        with np.errstate(over="ignore"):
            noise.init_perm(seed, perm)
        np.testing.assert_array_equal(perm, _init(seed)[0])
        ref = OpenSimplex(seed)
        for x, y in rng.uniform(-2, 30, (60, 2)):
            for z in (0, 3, 8):
                assert noise.noise3(perm, x, y, z) == ref.noise3(x, y, z)


def test_noise3_equals_opensimplex_on_worldgens_grids():
    """noise3 bit for bit opensimplex's at every point worldgen asks for: each field's grid
    of 64 x 64 cells (its coordinates as crafter's ``_simplex`` computes them), two seeds.
    Catches a change of the noise's arithmetic (e.g. a reordered sum, a branch left out)
    that random points might miss."""
    from opensimplex import OpenSimplex

    from batchenv.envs.crafter.worldgen import COORDINATES, FIELDS

    for seed in (5, 2**31 - 2):
        perm = np.zeros(256, np.uint8)
        with np.errstate(over="ignore"):
            noise.init_perm(seed, perm)
        ref = OpenSimplex(seed)
        for field in range(len(FIELDS)):
            z = float(FIELDS[field, 6])
            xs, ys = COORDINATES[field]
            for x in xs.tolist():
                for y in ys.tolist():
                    assert noise.noise3(perm, x, y, z) == ref.noise3(x, y, z), (seed, field)


# ----------------------------------------------------------------------------- worlds
def test_worlds_equal_crafters_for_the_same_draws(pixels):
    """Four worlds, generated by our kernels and by crafter's worldgen from the same words:
    equal material maps, objects, chunk order, first images, and the same number of draws
    (new_references checks it)."""
    refs = new_references(pixels, seed=3)
    assert sum(len(ref._world.objects) for ref in refs) > 4 * 20  # cows, zombies, ...


# ----------------------------------------------------------------------------- steps
def test_random_play_equals_crafter(pixels):
    """Random play from new worlds: every field, reward, end and image equal to crafter's at
    every step, the same draws (nights, balancing every 10th step and deaths included)."""
    refs = new_references(pixels, seed=20)
    seen = cp.run(pixels, refs, 230, random_actions(1, N))
    assert seen["deaths"] >= 1 and seen["night"] > 0 and seen["steps"] > 600


def _crafting(ref: cp.Reference, rng: np.random.Generator) -> None:
    """Materials to use around the player, a table and a furnace next to it."""
    p, w = ref._player, ref._world
    for name in ("wood", "stone", "coal", "iron", "sapling"):
        p.inventory[name] = int(rng.integers(3, 10))
    x, y = p.pos
    w[x - 1, y] = "table"
    w[x + 1, y + 1] = "furnace"
    for dx, dy, m in ((0, -1, "stone"), (1, -1, "coal"), (-1, -1, "iron"), (2, 0, "tree"),
                      (-1, 1, "diamond"), (0, 2, "water"), (-2, 0, "grass")):
        w[x + dx, y + dy] = m
    for (dx, dy) in ((0, -1), (1, -1), (-1, -1), (2, 0), (-1, 1), (0, 2), (-1, 0), (1, 1)):
        obj = w[x + dx, y + dy][1]
        if obj is not None:
            w.remove(obj)


def _monsters(ref: cp.Reference, rng: np.random.Generator) -> None:
    """Night; zombies and skeletons next to the player on a path clearing, a sword, saplings,
    ripe plants near cows: combat, arrows, sleeping, plants eaten."""
    p, w = ref._player, ref._world
    ref._step = 170 + int(rng.integers(0, 40))  # dusk to night
    ref._update_time()
    x, y = p.pos
    for dx in range(-4, 5):
        for dy in range(-4, 5):
            if (dx, dy) != (0, 0):
                obj = w[x + dx, y + dy][1]
                if obj is not None:
                    w.remove(obj)
                w[x + dx, y + dy] = "path" if (dx + dy) % 2 and abs(dx) + abs(dy) < 5 \
                    else "grass"
    w[x + 3, y - 3] = "table"
    w[x - 3, y + 3] = "furnace"
    p.inventory["sapling"] = 5
    p.inventory["energy"] = int(rng.integers(1, 5))
    if rng.random() < 0.5:
        p.inventory["wood_sword"] = 1
    spots = [(dx, dy) for dx in range(-4, 5) for dy in range(-4, 5) if abs(dx) + abs(dy) > 1]
    for k in rng.permutation(len(spots))[:9]:
        dx, dy = spots[k]
        pos = (x + dx, y + dy)
        kind = rng.integers(0, 4)
        if kind == 0:
            w.add(objects.Zombie(w, pos, p))
        elif kind == 1:
            w.add(objects.Skeleton(w, pos, p))
        elif kind == 2:
            w.add(objects.Cow(w, pos))
        else:
            w[pos] = "grass"
            plant = objects.Plant(w, pos)
            plant.grown = int(rng.integers(290, 320))
            w.add(plant)


def _edge(ref: cp.Reference, rng: np.random.Generator) -> None:
    """The player on the world's first column (crafter's ``nearby`` sees nothing there)
    or last row, next to a table, with lava and the border around."""
    p, w = ref._player, ref._world
    x, y = (0, int(rng.integers(5, 59))) if rng.random() < 0.5 else (int(rng.integers(5, 59)),
                                                                     63)
    for dx in range(-2, 3):
        for dy in range(-2, 3):
            pos = (x + dx, y + dy)
            if 0 <= pos[0] < 64 and 0 <= pos[1] < 64:
                obj = w[pos][1]
                if obj is not None and obj is not p:
                    w.remove(obj)
                w[pos] = "grass"
    w.move(p, (x, y))
    tx, ty = (x + 1, y) if x == 0 else (x, y - 1)
    w[tx, ty] = "table"
    w[(x, y - 1) if x == 0 else (x - 1, y)] = "lava"
    p.inventory["wood"] = 5


@pytest.mark.parametrize("scenario,weights,steps", [
    (_crafting, [1, 2, 2, 2, 2, 6, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2], 60),
    (_monsters, [2, 2, 2, 2, 2, 6, 3, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1], 80),
    (_edge, [1, 3, 3, 3, 3, 4, 1, 1, 2, 1, 1, 3, 1, 1, 3, 1, 1], 40),
])
def test_scenarios_equal_crafter(pixels, scenario, weights, steps):
    """Injected states built around the rules a random walk rarely meets (crafting and
    mining, night fights with zombies, skeletons and arrows, sleeping, plants and cows, the
    world's border, lava) stepped beside crafter: equal at every step."""
    refs = [cp.reference(seed=k) for k in range(N)]
    rng = np.random.default_rng(sum(map(ord, scenario.__name__)))
    keys = seed_keys(np.arange(N) + 100)
    for i, ref in enumerate(refs):
        cp.reset_like(ref, int(keys[i]))
        scenario(ref, rng)
    inject(pixels, refs, seed=50)
    before = [dict(ref._player.achievements) for ref in refs]
    cp.run(pixels, refs, steps, random_actions(2, N, weights))
    gained = {k for ref, b in zip(refs, before) for k, v in ref._player.achievements.items()
              if v > b[k]}
    expected = {_crafting: {"make_wood_pickaxe", "make_iron_pickaxe", "make_iron_sword",
                            "place_table", "place_furnace", "collect_stone",
                            "collect_drink"},
                _monsters: {"place_plant", "defeat_zombie"},
                _edge: {"make_wood_pickaxe", "place_table"}}[scenario]
    assert expected <= gained, expected - gained


# ----------------------------------------------------------------------------- images
def test_pillow_formulas():
    """The light formula's integer steps equal Pillow's, for every byte: RGB -> L and
    ``Image.blend(L, image, 0.4)`` (ImageEnhance.Color's)."""
    from PIL import Image, ImageEnhance

    v = np.arange(256)
    rgb = np.stack(np.meshgrid(v, v, indexing="ij"), -1).reshape(-1, 2)
    image = np.stack([rgb[:, 0], rgb[:, 1], rgb[:, 0][::-1]], -1).astype(np.uint8)
    image = image.reshape(256, 256, 3)
    grey = np.array(Image.fromarray(image).convert("L")).astype(np.int64)
    t = image.astype(np.int64)
    np.testing.assert_array_equal(
        grey, (t[..., 0] * 19595 + t[..., 1] * 38470 + t[..., 2] * 7471 + 0x8000) >> 16)
    enhanced = np.array(ImageEnhance.Color(Image.fromarray(image)).enhance(0.4))
    np.testing.assert_array_equal(enhanced, (3 * grey[..., None] + 2 * t) // 5)
    # the kernels' // 5 (render.fifth), for every value 3 L + 2 t takes and beyond
    x = np.arange(81920, dtype=np.uint32)
    np.testing.assert_array_equal(render.fifth(x), x // 5)
    assert render.fifth(np.uint32(1275)) == 255


def test_textures_and_tiles_are_crafters():
    """Our texture reading is ``engine.Textures``' and a world cell's picture is what
    crafter's ``LocalView`` draws for it."""
    textures = crafter.engine.Textures(crafter.constants.root / "assets")
    for name in ("grass", "player-left", "zombie", "1", "unknown", "arrow-up"):
        np.testing.assert_array_equal(render.texture(name, 7), textures.get(name, (7, 7)))
        np.testing.assert_array_equal(render.texture(name, 5), textures.get(name, (5, 5)))


def test_night_noise_off():
    """``night_noise=False`` darkens the night without noise: the image equals crafter's
    with its ``_noise`` left out."""
    env = BatchCrafter(1, night_noise=False)
    ref = cp.reference()
    cp.reset_like(ref, 7)
    ref._step = 200
    ref._update_time()
    assert ref._world.daylight < 0.5
    inject(env, [ref], seed=0)
    ref._local_view._noise = lambda canvas, amount, stddev: canvas
    np.testing.assert_array_equal(env.render_envs(env.state)[0], ref.render())


# ----------------------------------------------------------------------------- symbolic
def test_symbolic_observation():
    """The symbolic vector of an injected state read back against crafter's semantic view
    (materials and objects of the 9 x 7 cells around the player), inventory, facing,
    daylight and sleep."""
    env = BatchCrafter(1, obs_type="symbolic", kernels="python")
    ref = cp.reference()
    cp.reset_like(ref, 11)
    _monsters(ref, np.random.default_rng(0))
    ref._player.sleeping = True
    vec = inject(env, [ref], seed=0)[0]
    assert vec.shape == (render.SYMBOLIC_SIZE,) and vec.dtype == np.float32
    layout = dict((name, (a, b)) for name, a, b in render.symbolic_layout())
    view = vec[slice(*layout["view"])].reshape(7, 9, render.CELL_CHANNELS)
    sem = ref._sem_view()
    px, py = ref._player.pos
    kinds = {13 + 1: 0, 13 + 2: 1, 13 + 3: 2, 13 + 4: 3, 13 + 5: 4}  # semantic ids
    for gy in range(7):
        for gx in range(9):
            x, y = px + gx - 4, py + gy - 3
            cell = view[gy, gx]
            if not (0 <= x < 64 and 0 <= y < 64):
                assert not cell.any()
                continue
            material = ref._world._mat_map[x, y]
            assert cell[:12].tolist() == [float(material == m) for m in range(1, 13)]
            obj = ref._world[x, y][1]
            want = np.zeros(6)
            if obj is not None and obj is not ref._player:
                ch = kinds[int(sem[x, y])]
                if isinstance(obj, objects.Plant) and obj.ripe:
                    ch += 1
                want[ch] = 1
            np.testing.assert_array_equal(cell[12:], want, err_msg=f"cell {gx, gy}")
    inv = vec[slice(*layout["inventory"])]
    np.testing.assert_allclose(inv * 9, [ref._player.inventory[k] for k in data.ITEMS],
                               atol=1e-5)
    facing = vec[slice(*layout["facing"])]
    assert facing.tolist() == [float(k == cp._FACING[tuple(ref._player.facing)])
                               for k in range(4)]
    assert vec[slice(*layout["daylight"])][0] == np.float32(ref._world.daylight)
    assert vec[slice(*layout["sleeping"])][0] == 1.0


# ----------------------------------------------------------------------------- the env
def test_same_seed_same_episodes_at_any_batch_size(pixels):
    """Env i of a batch seeded s plays exactly as a batch of one seeded s + i: the same
    states after every step (crafter itself is not reproducible per seed)."""
    big = pixels
    big.reset(seed=40)
    small = BatchCrafter(1, autoreset_mode="Disabled")
    small.reset(seed=42)
    actions = random_actions(5, N)
    for t in range(60):
        a = actions(t)
        big.step(a)
        small.step(a[2:3])
        np.testing.assert_array_equal(big.get_state()[2], small.get_state()[0])


def test_two_threads_step_as_one():
    """``num_threads=2`` (two blocks of rows on two threads, docs/crafter.md) returns what
    one thread returns at every step, new worlds of both blocks included."""
    one, two = BatchCrafter(16), BatchCrafter(16, num_threads=2)
    assert (one.num_threads, two.num_threads) == (1, 2)
    for out_one, out_two in zip(one.reset(seed=8), two.reset(seed=8)):
        np.testing.assert_equal(out_one, out_two)
    actions = random_actions(9, 16)
    ended = np.zeros(16, dtype=int)
    for t in range(260):
        a = actions(t)
        got_one, got_two = one.step(a), two.step(a)
        for out_one, out_two in zip(got_one, got_two):
            np.testing.assert_equal(out_one, out_two, err_msg=f"step {t}")
        ended += got_one[2] | got_one[3]
    assert ended[:8].sum() >= 2 and ended[8:].sum() >= 2  # new worlds in both blocks


def test_info_holds_the_finished_episode_on_its_last_step(pixels):
    """``info["achievements"]`` (int32, 22, sorted names) and ``info["inventory"]``: on the
    step that ends an episode (NEXT_STEP) the finished episode's values (a Disabled twin's
    state after that step), then the new episode's."""
    twin = BatchCrafter(N)  # NEXT_STEP
    pixels.reset(seed=60)
    twin.reset(seed=60)
    actions = random_actions(6, N)
    ended = 0
    for t in range(400):
        a = actions(t)
        _, _, term, trunc, info = twin.step(a)
        before = pixels.get_state()
        pixels.step(a)
        after = pixels.get_state()
        assert info["achievements"].dtype == np.int32
        assert info["achievements"].shape == (N, len(crafter.constants.achievements))
        live = ~before["awaiting_reset"]
        np.testing.assert_array_equal(info["achievements"][live], after["achievements"][live])
        np.testing.assert_array_equal(info["inventory"][live], after["inventory"][live])
        np.testing.assert_array_equal(info["achievements"], twin.get_state()["achievements"])
        ended += int((term | trunc).sum())
        if ended >= 2:
            break
        if after["awaiting_reset"].any():  # the twin resets these next step: start again
            pixels.set_state(twin.get_state())
    assert ended >= 2


def test_pixels_without_crafter_raise_naming_the_extra(monkeypatch):
    """Without the crafter package: pixels raise ImportError naming batchenv[crafter];
    symbolic observations work."""
    render.tables.cache_clear()
    render._originals.cache_clear()
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "crafter" else real(name, *a))
    try:
        with pytest.raises(ImportError, match=r"batchenv\[crafter\]"):
            BatchCrafter(1)
        env = BatchCrafter(1, obs_type="symbolic", kernels="python")
        assert env.single_observation_space.shape == (render.SYMBOLIC_SIZE,)
    finally:
        monkeypatch.undo()
        render.tables.cache_clear()
        render._originals.cache_clear()


def test_bad_arguments():
    with pytest.raises(ValueError, match="obs_type"):
        BatchCrafter(1, obs_type="rgb")


@pytest.mark.slow
def test_check_env_passes():
    """The BatchEnv contract (batchenv.testing.check_env: debug mode's checked kernels,
    every auto-reset mode, states inside and outside the ranges, rendering). Slow: it
    compiles the checked loop."""
    from batchenv.testing import check_env

    check_env("batchenv/Crafter-v1", num_envs=4, steps=60)


# ----------------------------------------------------------------------------- statistics
# Our worlds and episodes (our streams) against crafter's own (its streams): the means of
# each metric compared by a two-sample z (Welch's; for the achievements' unlock rates, the
# two-proportion test's); |z| below Z_MAX for every metric (the samples of the fast tests
# are small: they catch gross differences, the slow ones finer ones).
Z_MAX = 4.5


@pytest.mark.parametrize("ours,theirs", [(256, 30), pytest.param(2048, 400,
                                                                  marks=pytest.mark.slow)])
def test_world_statistics(ours, theirs):
    """Cells of each material and the cows, zombies and skeletons a world starts with."""
    a = stats.our_worlds(ours, seed=1000)
    b = stats.crafter_worlds(theirs, seed=7)
    z = stats.z_scores(a, b)
    worst = int(np.abs(z).argmax())
    print(f"worlds {ours} vs {theirs}: worst z {z[worst]:+.2f} ({stats.WORLD_METRICS[worst]})")
    assert np.abs(z).max() < Z_MAX, (stats.WORLD_METRICS[worst], z[worst])
    assert a[:, stats.WORLD_METRICS.index("grass")].mean() > 1000  # (a world was made)


@pytest.mark.parametrize("policy,ours,theirs", [
    (stats.random_policy, 128, 10),
    pytest.param(stats.random_policy, 1024, 150, marks=pytest.mark.slow),
    pytest.param(stats.scripted, 512, 60, marks=pytest.mark.slow)])
def test_episode_statistics(policy, ours, theirs):
    """Episode length, return and each achievement's unlock rate under a policy."""
    a = stats.our_episodes(policy, ours, seed=2000)
    b = stats.crafter_episodes(policy, theirs, seed=9)
    z = stats.z_scores(a, b, rates=slice(2, None))
    names = ("length", "return", *data.ACHIEVEMENTS)
    worst = int(np.abs(z).argmax())
    print(f"{policy.__name__} {ours} vs {theirs}: worst z {z[worst]:+.2f} ({names[worst]}); "
          f"length {a[:, 0].mean():.0f} vs {b[:, 0].mean():.0f}, return "
          f"{a[:, 1].mean():.2f} vs {b[:, 1].mean():.2f}")
    assert np.abs(z).max() < Z_MAX, (names[worst], z[worst], a.mean(0)[worst],
                                     b.mean(0)[worst])
    assert a[:, 0].mean() > 50 and a[:, 2:].sum() > 0


# ----------------------------------------------------------------------------- PPO example
def _ppo_example():
    import importlib.util
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "docs" / "examples"
    if str(examples) not in sys.path:
        sys.path.insert(0, str(examples))
    spec = importlib.util.spec_from_file_location("example_ppo_crafter",
                                                  examples / "ppo_crafter.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_crafter_score_is_hafners():
    """docs/examples/ppo_crafter.py's score: the success rates in percent and their
    geometric mean exp(mean(ln(1 + s))) - 1 (Hafner 2022, crafter's analysis scripts)."""
    pytest.importorskip("torch")
    ppo = _ppo_example()
    unlocked = np.zeros((4, 22), dtype=bool)
    unlocked[:2, 0] = True  # one achievement in half the episodes
    unlocked[:, 1] = True  # one in all of them
    score, rates = ppo.crafter_score(unlocked)
    assert rates[0] == 50 and rates[1] == 100 and rates[2:].sum() == 0
    assert score == pytest.approx(np.exp((np.log(51) + np.log(101)) / 22) - 1)
    assert ppo.crafter_score(np.ones((3, 22), dtype=bool))[0] == pytest.approx(100)
    assert ppo.crafter_score(np.zeros((3, 22), dtype=bool))[0] == 0


@pytest.mark.slow  # compiles the symbolic loop
def test_ppo_crafter_smoke(tmp_path):
    """A few updates: the losses are finite, episodes end (a 40-step limit) and the score
    is computed from their achievements."""
    ppo = _ppo_example()
    csv_path = tmp_path / "crafter.csv"
    summary = ppo.main(["--num-envs", "8", "--num-steps", "32", "--total-steps", "1024",
                        "--num-minibatches", "2", "--update-epochs", "1", "--threads", "1",
                        "--max-episode-steps", "40", "--score-window", "8",
                        "--csv", str(csv_path)])
    assert summary["global_step"] == 1024 and summary["episodes"] >= 8
    assert np.isfinite([summary["loss"], summary["entropy"]]).all()
    assert 0 <= summary["crafter_score_last"] <= 100
    assert set(summary["success_rates"]) == set(data.ACHIEVEMENTS)
