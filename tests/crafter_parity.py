"""The Crafter parity harness: run the ``crafter`` package (1.8.3) and BatchCrafter side by
side with the same random draws and the same states, and compare them.

How the two get the same randomness. crafter draws everything from one
``np.random.RandomState``, the world's (``World.random``, which its objects hold too):
world generation, the creatures, the player's sapling, the chunks' balance and the night
noise of its image. BatchCrafter draws from its env's counter-based stream in the same
order and for the same conditions (``batchenv/envs/crafter/rules.py``). The harness gives
the reference a :class:`StandIn` as its ``World.random`` that hands out the very words our
row's stream gives, one per call, in order, computed by the independent oracle
(``tests/_splitmix.py``): ``uniform()`` is ``(w >> 11) * 2**-53``, ``randint(a, b)`` is
``a + w % (b - a)``, and the night noise ``uniform(32, 127, (63, 49))`` is
:func:`batchenv.envs.crafter.render.noise_field` of one word. After each step the number
of words the reference took must equal how far our row's counter moved: the two drew in
the same order, or the test fails.

How the two get the same state. :func:`record_of` converts a ``crafter.Env`` (its world
map, object list, chunk dict, player, inventory, achievements, counters, clock) into
BatchCrafter's state record; :func:`inject` writes it into a row with ``set_state``; a whole
step is then compared as the two records after it (every field), the reward, the end of
the episode and the image.

One change to the reference: ``Env._balance_object`` picks the creature to despawn from a
Python set, whose order follows memory addresses (crafter is not reproducible for a seed);
:class:`Reference` takes the chunk's creatures in the world's object order instead, the
order BatchCrafter uses (docs/crafter.md).
"""

from __future__ import annotations

import crafter
import numpy as np
from _splitmix import unit, words
from crafter import objects

from batchenv.envs.crafter import render
from batchenv.envs.crafter.data import ACHIEVEMENTS, ITEMS, KINDS, MATERIALS

_KIND = {objects.Cow: 1, objects.Zombie: 2, objects.Skeleton: 3, objects.Arrow: 4,
         objects.Plant: 5}
_FACING = {(-1, 0): 0, (1, 0): 1, (0, -1): 2, (0, 1): 3}


class StandIn:
    """``np.random.RandomState`` for crafter's world: each call takes the next word of a
    row's stream (key, counter), as BatchCrafter draws it."""

    def __init__(self, key: int = 0, counter: int = 0) -> None:
        self.load(key, counter)

    def load(self, key: int, counter: int) -> None:
        self.key, self.counter, self.taken = int(key), int(counter), 0

    def word(self) -> int:
        w = words(self.key, self.counter + self.taken, 1)[0]
        self.taken += 1
        return w

    def uniform(self, low: float = 0.0, high: float = 1.0, size=None):
        if size is None:
            assert (low, high) == (0.0, 1.0), (low, high)
            return unit(self.word())
        assert (low, high, tuple(size)) == (32, 127, (63, 49)), (low, high, size)
        return render.noise_field(self.word())

    def randint(self, low: int, high: int | None = None, size=None):
        assert size is None and high is not None
        return low + self.word() % (high - low)


class Reference(crafter.Env):
    """crafter's ``Env`` drawing from a :class:`StandIn`, its despawn choice in object
    order (see the module docstring)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.stand = StandIn()
        world = self._world
        reset = world.reset

        def reset_with_stand_in(seed=None):
            reset(seed)
            world.random = self.stand

        world.reset = reset_with_stand_in
        world.random = self.stand

    def _balance_object(self, chunk, objs, cls, material, span_dist, despan_dist,
                        spawn_prob, despawn_prob, ctor, target_fn):
        order = {id(obj): k for k, obj in enumerate(self._world._objects)}
        objs = sorted(objs, key=lambda obj: order[id(obj)])
        super()._balance_object(chunk, objs, cls, material, span_dist, despan_dist,
                                spawn_prob, despawn_prob, ctor, target_fn)


def record_of(ref: crafter.Env, dtype: np.dtype, key: int = 0, counter: int = 0,
              noise_key: int = 0) -> np.ndarray:
    """BatchCrafter's state record of the reference's game (its stream at ``key``,
    ``counter``)."""
    rec = np.zeros((), dtype=dtype)
    world, player = ref._world, ref._player
    assert world._mat_ids == {m if k else None: k for k, m in enumerate(MATERIALS)}
    rec["mat"] = world._mat_map
    rec["occ"][tuple(player.pos)] = 1
    k = 0
    for obj in world._objects:
        if obj is None or obj is player:
            continue
        rec["kind"][k] = _KIND[type(obj)]
        rec["obj_x"][k], rec["obj_y"][k] = obj.pos
        rec["obj_health"][k] = obj.health
        if isinstance(obj, objects.Zombie):
            rec["obj_timer"][k] = obj.cooldown
        elif isinstance(obj, objects.Skeleton):
            rec["obj_timer"][k] = obj.reload
        elif isinstance(obj, objects.Plant):
            rec["obj_timer"][k] = obj.grown
        elif isinstance(obj, objects.Arrow):
            rec["obj_dir"][k] = _FACING[tuple(int(v) for v in obj.facing)]
        rec["occ"][tuple(obj.pos)] = k + 2
        k += 1
    rec["n_objects"] = k
    chunks = list(world._chunks)
    rec["chunk_order"][:len(chunks)] = [(x0 // 12) * 6 + y0 // 12 for x0, _, y0, _ in chunks]
    rec["n_chunks"] = len(chunks)
    census(rec)
    rec["player_x"], rec["player_y"] = player.pos
    rec["facing"] = _FACING[tuple(int(v) for v in player.facing)]
    rec["sleeping"] = player.sleeping
    rec["inventory"] = [player.inventory[name] for name in ITEMS]
    rec["achievements"] = [player.achievements[name] for name in ACHIEVEMENTS]
    rec["hunger"], rec["thirst"] = player._hunger, player._thirst
    rec["fatigue"], rec["recover"] = player._fatigue, player._recover
    rec["last_health"] = player._last_health
    rec["step"] = ref._step
    rec["noise_key"] = noise_key
    rec["rng_key"], rec["rng_counter"] = key, counter
    return rec


def census(rec: np.ndarray) -> None:
    """The record's chunk census (``census``, ``grass``, ``path``) from its material map and
    objects, as crafter counts them when it balances the chunks."""
    rec["census"] = 0
    for k in range(int(rec["n_objects"])):
        column = {2: 0, 3: 1, 1: 2}.get(int(rec["kind"][k]))
        if column is not None:
            rec["census"][(rec["obj_x"][k] // 12) * 6 + rec["obj_y"][k] // 12, column] += 1
    chunk = (np.arange(64)[:, None] // 12) * 6 + np.arange(64)[None, :] // 12
    for name, m in (("grass", MATERIALS.index("grass")), ("path", MATERIALS.index("path"))):
        rec[name] = np.bincount(chunk[rec["mat"] == m], minlength=36)


#: the fields a step is compared on (noise_perm is world generation's, compared there)
COMPARED = ("mat", "occ", "n_objects", "kind", "obj_x", "obj_y", "obj_health", "obj_timer",
            "obj_dir", "chunk_order", "n_chunks", "census", "grass", "path", "player_x",
            "player_y", "facing", "sleeping", "inventory", "achievements", "hunger",
            "thirst", "fatigue", "recover", "last_health", "step")


def assert_same(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    """Every compared field of two records equal (the slots past ``n_objects`` and the
    chunk list past ``n_chunks`` are free: not compared)."""
    n = int(theirs["n_objects"])
    for name in COMPARED:
        a, b = ours[name], theirs[name]
        if name in ("kind", "obj_x", "obj_y", "obj_health", "obj_timer", "obj_dir"):
            a, b = a[:n], b[:n]
            if name == "obj_dir":  # only arrows have one
                arrows = theirs["kind"][:n] == KINDS.index("arrow")
                a, b = a[arrows], b[arrows]
        if name == "chunk_order":
            a, b = a[:int(theirs["n_chunks"])], b[:int(theirs["n_chunks"])]
        if not np.array_equal(a, b):
            diff = np.argwhere(np.asarray(a) != np.asarray(b))[:5].tolist()
            raise AssertionError(f"{what}: field {name} differs at {diff}: ours "
                                 f"{np.asarray(a).ravel()[:12]} vs crafter's "
                                 f"{np.asarray(b).ravel()[:12]}")


def reference(seed: int = 0, length: int | None = 10000) -> Reference:
    return Reference(seed=seed, length=length)


def reset_like(ref: Reference, key: int, counter: int = 0) -> np.ndarray:
    """The reference's ``reset`` (a new world) drawing row ``key``'s words from
    ``counter``; returns its image. The words taken: ``ref.stand.taken``."""
    ref.stand.load(key, counter)
    return ref.reset()



def run(env, refs: list[Reference], steps: int, actions, compare_obs: bool = True) -> dict:
    """Step ``env`` (injected or reset from the references, autoreset ``Disabled``) and its
    references together for ``steps`` steps with ``actions(t) -> (num_envs,)`` int array;
    assert every field, the reward, the episode's end, the image and the number of draws
    equal after every step (a reference stops when its episode ends). Returns counts of
    what happened (for the tests to check their scenarios reach what they test)."""
    n = env.num_envs
    live = np.ones(n, dtype=bool)
    seen = {"steps": 0, "deaths": 0, "night": 0}
    for t in range(steps):
        before = env.get_state()
        a = np.asarray(actions(t), dtype=np.int64)
        obs, reward, terminated, truncated, env_info = env.step(a)
        after = env.get_state()
        for i in np.flatnonzero(live):
            ref = refs[i]
            ref.stand.load(int(before["rng_key"][i]), int(before["rng_counter"][i]))
            robs, rreward, done, info = ref.step(int(a[i]))
            what = f"env {i} step {t} (crafter step {ref._step}, action {a[i]})"
            drawn = int(after["rng_counter"][i] - before["rng_counter"][i])
            assert ref.stand.taken == drawn, f"{what}: crafter drew {ref.stand.taken} " \
                                             f"words, ours {drawn}"
            rec = record_of(ref, env.full_state_dtype)
            assert_same(after[i], rec, what)
            assert reward[i] == rreward, f"{what}: reward {reward[i]} vs {rreward}"
            dead = info["discount"] == 0
            assert bool(terminated[i]) == dead, f"{what}: terminated {terminated[i]}"
            assert bool(terminated[i] or truncated[i]) == done, f"{what}: done"
            assert env_info["achievements"][i].tolist() == [
                info["achievements"][k] for k in ACHIEVEMENTS], f"{what}: info achievements"
            assert env_info["inventory"][i].tolist() == [
                info["inventory"][k] for k in ITEMS], f"{what}: info inventory"
            if compare_obs:
                if not np.array_equal(obs[i], robs):
                    bad = np.argwhere(obs[i] != robs)
                    raise AssertionError(f"{what}: {len(bad)} pixels differ, first "
                                         f"{bad[:3].tolist()}: ours "
                                         f"{obs[i][tuple(bad[0][:2])]} vs "
                                         f"{robs[tuple(bad[0][:2])]}")
            seen["steps"] += 1
            seen["night"] += ref._world.daylight < 0.5
            if done:
                live[i] = False
                seen["deaths"] += dead
        if not live.any():
            break
    return seen
