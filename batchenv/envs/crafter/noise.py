"""OpenSimplex noise in 3D, as crafter's world generation calls it: ``opensimplex`` 0.4.5's
``OpenSimplex(seed).noise3(x, y, z)``, ported to a :func:`~batchenv.perenv.rule`.

crafter 1.8.3's ``worldgen._simplex`` calls ``simplex.noise3(x / size, y / size, z)`` (its
``noise3d`` branch is for opensimplex < 0.4, which named it so), on an ``OpenSimplex`` seeded
with the world's first random draw. :func:`init_perm` is ``opensimplex.internals._init``
(the permutation, from the seed by a 64-bit LCG), :func:`noise3` is
``opensimplex.internals._noise3`` line for line (Kurt Spencer's OpenSimplex, via A. Svensson's
``opensimplex`` package, MIT licence), cut into a few functions, with one change that keeps
every value bit for bit (:func:`contribution`: no branch per lattice point), so that a
world's terrain is crafter's for the same seed: ``tests/test_crafter.py`` compares the two
value for value, on random points and on every field's grid of a world. The permutation is
kept as uint8 (its values are 0-255); opensimplex's ``perm_grad_index3[i]``, ``perm[i] % 24 *
3``, is :data:`GRADIENT_INDEX` of ``perm[i]`` (a table of the 256 values, the same for
every seed).
"""

from __future__ import annotations

from math import floor
from typing import Any

import numpy as np

from batchenv import perenv

__all__ = ["init_perm", "noise3", "contribution", "GRADIENTS3", "GRADIENT_INDEX"]

#: opensimplex/constants.py: gradients for 3D, the directions to the vertices of a
#: rhombicuboctahedron from its centre (x, y, z per gradient); float64, as opensimplex's
#: int64 entries become when they multiply a float64 (exactly: small integers)
GRADIENTS3 = np.array([
    -11, 4, 4, -4, 11, 4, -4, 4, 11,
    11, 4, 4, 4, 11, 4, 4, 4, 11,
    -11, -4, 4, -4, -11, 4, -4, -4, 11,
    11, -4, 4, 4, -11, 4, 4, -4, 11,
    -11, 4, -4, -4, 11, -4, -4, 4, -11,
    11, 4, -4, 4, 11, -4, 4, 4, -11,
    -11, -4, -4, -4, -11, -4, -4, -4, -11,
    11, -4, -4, 4, -11, -4, 4, -4, -11,
], dtype=np.float64)
#: ``v % 24 * 3`` for v in 0-255: the index into :data:`GRADIENTS3` of a permutation value
#: (a load from this table is cheaper than the remainder: 6-8% of :func:`noise3`, measured)
GRADIENT_INDEX = np.array([v % 24 * 3 for v in range(256)], dtype=np.int64)
STRETCH3 = -1.0 / 6  # (1/Math.sqrt(3+1)-1)/3
SQUISH3 = 1.0 / 3  # (Math.sqrt(3+1)-1)/3
NORM3 = 103
_LCG_MUL = np.uint64(6364136223846793005)  # opensimplex's _init: Knuth's MMIX LCG
_LCG_ADD = np.uint64(1442695040888963407)
_SIGN_BIT = np.uint64(1 << 63)
#: ``2**64 % (i + 1)`` for i in 0-255: the signed remainder's correction (see init_perm)
_WRAP_MOD = np.array([2**64 % (i + 1) for i in range(256)], dtype=np.int64)


@perenv.rule(inline=False)
def init_perm(seed: int, perm: np.ndarray) -> None:
    """``opensimplex.internals._init(seed)``'s permutation into ``perm`` (256 uint8): the
    seed through the LCG three times, then a Fisher-Yates shuffle of 0-255 driven by it.
    opensimplex runs the LCG on int64 (``ctypes.c_int64``: wrapping) and takes ``(seed + 31)
    % (i + 1)`` of the signed value as a Python int (non-negative, no overflow): here the
    LCG runs on uint64 (the same bits), and the signed value's remainder is the unsigned
    one's less ``2**64 % (i + 1)`` when the sign bit is set. ``perm`` doubles as
    opensimplex's ``source`` array (a swap: its entries above ``i`` are final)."""
    s = np.uint64(seed)
    for _ in range(3):
        s = s * _LCG_MUL + _LCG_ADD
    for i in range(256):
        perm[i] = i
    for i in range(255, -1, -1):
        s = s * _LCG_MUL + _LCG_ADD
        m = i + 1
        r = np.int64(s % np.uint64(m))
        if s >= _SIGN_BIT:
            r = (r - _WRAP_MOD[i]) % m
        r = (r + 31) % m
        v = perm[r]
        perm[r] = perm[i]
        perm[i] = v


@perenv.rule
def extrapolate3(perm: np.ndarray, xsb: int, ysb: int, zsb: int, dx: float, dy: float,
                 dz: float) -> float:
    """opensimplex's ``_extrapolate3``: the gradient of lattice point (xsb, ysb, zsb) (a
    hash of it through the permutation) dotted with the offset (dx, dy, dz)."""
    h = np.int64(perm[xsb & 0xFF])
    h = np.int64(perm[(h + ysb) & 0xFF])
    index = GRADIENT_INDEX[perm[(h + zsb) & 0xFF]]
    return GRADIENTS3[index] * dx + GRADIENTS3[index + 1] * dy + GRADIENTS3[index + 2] * dz


@perenv.rule
def contribution(perm: np.ndarray, xsv: int, ysv: int, zsv: int, dx: float, dy: float,
                 dz: float) -> float:
    """Lattice point (xsv, ysv, zsv)'s term of the sum at offset (dx, dy, dz): opensimplex's
    ``attn = 2 - dx * dx - dy * dy - dz * dz; if attn > 0: attn *= attn; value += attn *
    attn * _extrapolate3(...)``, with ``attn`` clamped at 0 instead of the branch. Where
    opensimplex adds nothing this adds +0.0 or -0.0, which leaves the sum bit for bit as it
    was (the sum starts at +0.0, and a sum of floats is -0.0 only when both terms are):
    the same value, without a branch the processor mispredicts about as often as it
    predicts it (a fifth of the noise's time, measured: docs/crafter.md)."""
    attn = max(2 - dx * dx - dy * dy - dz * dz, 0.0)
    attn *= attn
    return attn * attn * extrapolate3(perm, xsv, ysv, zsv, dx, dy, dz)


@perenv.rule
def lower_extras(xsb: int, ysb: int, zsb: int, xins: float, yins: float, zins: float,
                 in_sum: float, dx0: float, dy0: float, dz0: float) -> tuple[Any, ...]:
    """The two extra lattice points of a point in the tetrahedron at (0,0,0) (``in_sum <=
    1``): each one's cell (xsv, ysv, zsv) and offset (dx, dy, dz), as
    ``opensimplex.internals._noise3`` chooses them (its code, unchanged)."""
    # Determine which two of (0,0,1), (0,1,0), (1,0,0) are closest.
    a_point = 0x01
    a_score = xins
    b_point = 0x02
    b_score = yins
    if a_score >= b_score and zins > b_score:
        b_score = zins
        b_point = 0x04
    elif a_score < b_score and zins > a_score:
        a_score = zins
        a_point = 0x04

    # Now we determine the two lattice points not part of the tetrahedron that may contribute.
    # This depends on the closest two tetrahedral vertices, including (0,0,0)
    wins = 1 - in_sum
    # (0,0,0) is one of the closest two tetrahedral vertices?
    if wins > a_score or wins > b_score:
        # Our other closest vertex is the closest out of a and b.
        c = b_point if (b_score > a_score) else a_point

        if (c & 0x01) == 0:
            xsv_ext0 = xsb - 1
            xsv_ext1 = xsb
            dx_ext0 = dx0 + 1
            dx_ext1 = dx0
        else:
            xsv_ext0 = xsv_ext1 = xsb + 1
            dx_ext0 = dx_ext1 = dx0 - 1

        if (c & 0x02) == 0:
            ysv_ext0 = ysv_ext1 = ysb
            dy_ext0 = dy_ext1 = dy0
            if (c & 0x01) == 0:
                ysv_ext1 -= 1
                dy_ext1 += 1
            else:
                ysv_ext0 -= 1
                dy_ext0 += 1
        else:
            ysv_ext0 = ysv_ext1 = ysb + 1
            dy_ext0 = dy_ext1 = dy0 - 1

        if (c & 0x04) == 0:
            zsv_ext0 = zsb
            zsv_ext1 = zsb - 1
            dz_ext0 = dz0
            dz_ext1 = dz0 + 1
        else:
            zsv_ext0 = zsv_ext1 = zsb + 1
            dz_ext0 = dz_ext1 = dz0 - 1
    else:  # (0,0,0) is not one of the closest two tetrahedral vertices.
        c = a_point | b_point  # Our two extra vertices are determined by the closest two.

        if (c & 0x01) == 0:
            xsv_ext0 = xsb
            xsv_ext1 = xsb - 1
            dx_ext0 = dx0 - 2 * SQUISH3
            dx_ext1 = dx0 + 1 - SQUISH3
        else:
            xsv_ext0 = xsv_ext1 = xsb + 1
            dx_ext0 = dx0 - 1 - 2 * SQUISH3
            dx_ext1 = dx0 - 1 - SQUISH3

        if (c & 0x02) == 0:
            ysv_ext0 = ysb
            ysv_ext1 = ysb - 1
            dy_ext0 = dy0 - 2 * SQUISH3
            dy_ext1 = dy0 + 1 - SQUISH3
        else:
            ysv_ext0 = ysv_ext1 = ysb + 1
            dy_ext0 = dy0 - 1 - 2 * SQUISH3
            dy_ext1 = dy0 - 1 - SQUISH3

        if (c & 0x04) == 0:
            zsv_ext0 = zsb
            zsv_ext1 = zsb - 1
            dz_ext0 = dz0 - 2 * SQUISH3
            dz_ext1 = dz0 + 1 - SQUISH3
        else:
            zsv_ext0 = zsv_ext1 = zsb + 1
            dz_ext0 = dz0 - 1 - 2 * SQUISH3
            dz_ext1 = dz0 - 1 - SQUISH3

    return (xsv_ext0, ysv_ext0, zsv_ext0, dx_ext0, dy_ext0, dz_ext0,
            xsv_ext1, ysv_ext1, zsv_ext1, dx_ext1, dy_ext1, dz_ext1)


@perenv.rule
def upper_extras(xsb: int, ysb: int, zsb: int, xins: float, yins: float, zins: float,
                 in_sum: float, dx0: float, dy0: float, dz0: float) -> tuple[Any, ...]:
    """The two extra lattice points of a point in the tetrahedron at (1,1,1) (``in_sum >=
    2``), as :func:`lower_extras`."""
    # Determine which two tetrahedral vertices are the closest, out of (1,1,0), (1,0,1),
    # (0,1,1) but not (1,1,1).
    a_point = 0x06
    a_score = xins
    b_point = 0x05
    b_score = yins
    if a_score <= b_score and zins < b_score:
        b_score = zins
        b_point = 0x03
    elif a_score > b_score and zins < a_score:
        a_score = zins
        a_point = 0x03

    # Now we determine the two lattice points not part of the tetrahedron that may contribute.
    # This depends on the closest two tetrahedral vertices, including (1,1,1)
    wins = 3 - in_sum
    # (1,1,1) is one of the closest two tetrahedral vertices?
    if wins < a_score or wins < b_score:
        # Our other closest vertex is the closest out of a and b.
        c = b_point if (b_score < a_score) else a_point

        if (c & 0x01) != 0:
            xsv_ext0 = xsb + 2
            xsv_ext1 = xsb + 1
            dx_ext0 = dx0 - 2 - 3 * SQUISH3
            dx_ext1 = dx0 - 1 - 3 * SQUISH3
        else:
            xsv_ext0 = xsv_ext1 = xsb
            dx_ext0 = dx_ext1 = dx0 - 3 * SQUISH3

        if (c & 0x02) != 0:
            ysv_ext0 = ysv_ext1 = ysb + 1
            dy_ext0 = dy_ext1 = dy0 - 1 - 3 * SQUISH3
            if (c & 0x01) != 0:
                ysv_ext1 += 1
                dy_ext1 -= 1
            else:
                ysv_ext0 += 1
                dy_ext0 -= 1
        else:
            ysv_ext0 = ysv_ext1 = ysb
            dy_ext0 = dy_ext1 = dy0 - 3 * SQUISH3

        if (c & 0x04) != 0:
            zsv_ext0 = zsb + 1
            zsv_ext1 = zsb + 2
            dz_ext0 = dz0 - 1 - 3 * SQUISH3
            dz_ext1 = dz0 - 2 - 3 * SQUISH3
        else:
            zsv_ext0 = zsv_ext1 = zsb
            dz_ext0 = dz_ext1 = dz0 - 3 * SQUISH3
    else:  # (1,1,1) is not one of the closest two tetrahedral vertices.
        c = a_point & b_point  # Our two extra vertices are determined by the closest two.

        if (c & 0x01) != 0:
            xsv_ext0 = xsb + 1
            xsv_ext1 = xsb + 2
            dx_ext0 = dx0 - 1 - SQUISH3
            dx_ext1 = dx0 - 2 - 2 * SQUISH3
        else:
            xsv_ext0 = xsv_ext1 = xsb
            dx_ext0 = dx0 - SQUISH3
            dx_ext1 = dx0 - 2 * SQUISH3

        if (c & 0x02) != 0:
            ysv_ext0 = ysb + 1
            ysv_ext1 = ysb + 2
            dy_ext0 = dy0 - 1 - SQUISH3
            dy_ext1 = dy0 - 2 - 2 * SQUISH3
        else:
            ysv_ext0 = ysv_ext1 = ysb
            dy_ext0 = dy0 - SQUISH3
            dy_ext1 = dy0 - 2 * SQUISH3

        if (c & 0x04) != 0:
            zsv_ext0 = zsb + 1
            zsv_ext1 = zsb + 2
            dz_ext0 = dz0 - 1 - SQUISH3
            dz_ext1 = dz0 - 2 - 2 * SQUISH3
        else:
            zsv_ext0 = zsv_ext1 = zsb
            dz_ext0 = dz0 - SQUISH3
            dz_ext1 = dz0 - 2 * SQUISH3

    return (xsv_ext0, ysv_ext0, zsv_ext0, dx_ext0, dy_ext0, dz_ext0,
            xsv_ext1, ysv_ext1, zsv_ext1, dx_ext1, dy_ext1, dz_ext1)


@perenv.rule
def octahedron_closest(xins: float, yins: float, zins: float) -> tuple[int, bool, int, bool]:
    """The two closest of the octahedron's vertices to a point inside it, and whether each
    is on the (1,1,1) side: ``a_point, a_is_further_side, b_point, b_is_further_side``."""
    # Decide between point (0,0,1) and (1,1,0) as closest
    p1 = xins + yins
    if p1 > 1:
        a_score = p1 - 1
        a_point = 0x03
        a_is_further_side = True
    else:
        a_score = 1 - p1
        a_point = 0x04
        a_is_further_side = False

    # Decide between point (0,1,0) and (1,0,1) as closest
    p2 = xins + zins
    if p2 > 1:
        b_score = p2 - 1
        b_point = 0x05
        b_is_further_side = True
    else:
        b_score = 1 - p2
        b_point = 0x02
        b_is_further_side = False

    # The closest out of the two (1,0,0) and (0,1,1) will replace the furthest
    # out of the two decided above, if closer.
    p3 = yins + zins
    if p3 > 1:
        score = p3 - 1
        if a_score <= b_score and a_score < score:
            a_point = 0x06
            a_is_further_side = True
        elif a_score > b_score and b_score < score:
            b_point = 0x06
            b_is_further_side = True
    else:
        score = 1 - p3
        if a_score <= b_score and a_score < score:
            a_point = 0x01
            a_is_further_side = False
        elif a_score > b_score and b_score < score:
            b_point = 0x01
            b_is_further_side = False

    # Where each of the two closest points are determines how the extra two vertices are
    # calculated.
    return a_point, a_is_further_side, b_point, b_is_further_side


@perenv.rule
def octahedron_extras(a_point: int, a_is_further_side: bool, b_point: int,
                      b_is_further_side: bool, xsb: int, ysb: int, zsb: int, dx0: float,
                      dy0: float, dz0: float) -> tuple[Any, ...]:
    """The two extra lattice points of a point in the octahedron (from
    :func:`octahedron_closest`), as :func:`lower_extras`."""
    if a_is_further_side == b_is_further_side:
        if a_is_further_side:  # Both closest points on (1,1,1) side

            # One of the two extra points is (1,1,1)
            dx_ext0 = dx0 - 1 - 3 * SQUISH3
            dy_ext0 = dy0 - 1 - 3 * SQUISH3
            dz_ext0 = dz0 - 1 - 3 * SQUISH3
            xsv_ext0 = xsb + 1
            ysv_ext0 = ysb + 1
            zsv_ext0 = zsb + 1

            # Other extra point is based on the shared axis.
            c = a_point & b_point
            if (c & 0x01) != 0:
                dx_ext1 = dx0 - 2 - 2 * SQUISH3
                dy_ext1 = dy0 - 2 * SQUISH3
                dz_ext1 = dz0 - 2 * SQUISH3
                xsv_ext1 = xsb + 2
                ysv_ext1 = ysb
                zsv_ext1 = zsb
            elif (c & 0x02) != 0:
                dx_ext1 = dx0 - 2 * SQUISH3
                dy_ext1 = dy0 - 2 - 2 * SQUISH3
                dz_ext1 = dz0 - 2 * SQUISH3
                xsv_ext1 = xsb
                ysv_ext1 = ysb + 2
                zsv_ext1 = zsb
            else:
                dx_ext1 = dx0 - 2 * SQUISH3
                dy_ext1 = dy0 - 2 * SQUISH3
                dz_ext1 = dz0 - 2 - 2 * SQUISH3
                xsv_ext1 = xsb
                ysv_ext1 = ysb
                zsv_ext1 = zsb + 2
        else:  # Both closest points on (0,0,0) side

            # One of the two extra points is (0,0,0)
            dx_ext0 = dx0
            dy_ext0 = dy0
            dz_ext0 = dz0
            xsv_ext0 = xsb
            ysv_ext0 = ysb
            zsv_ext0 = zsb

            # Other extra point is based on the omitted axis.
            c = a_point | b_point
            if (c & 0x01) == 0:
                dx_ext1 = dx0 + 1 - SQUISH3
                dy_ext1 = dy0 - 1 - SQUISH3
                dz_ext1 = dz0 - 1 - SQUISH3
                xsv_ext1 = xsb - 1
                ysv_ext1 = ysb + 1
                zsv_ext1 = zsb + 1
            elif (c & 0x02) == 0:
                dx_ext1 = dx0 - 1 - SQUISH3
                dy_ext1 = dy0 + 1 - SQUISH3
                dz_ext1 = dz0 - 1 - SQUISH3
                xsv_ext1 = xsb + 1
                ysv_ext1 = ysb - 1
                zsv_ext1 = zsb + 1
            else:
                dx_ext1 = dx0 - 1 - SQUISH3
                dy_ext1 = dy0 - 1 - SQUISH3
                dz_ext1 = dz0 + 1 - SQUISH3
                xsv_ext1 = xsb + 1
                ysv_ext1 = ysb + 1
                zsv_ext1 = zsb - 1
    else:  # One point on (0,0,0) side, one point on (1,1,1) side
        if a_is_further_side:
            c1 = a_point
            c2 = b_point
        else:
            c1 = b_point
            c2 = a_point

        # One contribution is a permutation of (1,1,-1)
        if (c1 & 0x01) == 0:
            dx_ext0 = dx0 + 1 - SQUISH3
            dy_ext0 = dy0 - 1 - SQUISH3
            dz_ext0 = dz0 - 1 - SQUISH3
            xsv_ext0 = xsb - 1
            ysv_ext0 = ysb + 1
            zsv_ext0 = zsb + 1
        elif (c1 & 0x02) == 0:
            dx_ext0 = dx0 - 1 - SQUISH3
            dy_ext0 = dy0 + 1 - SQUISH3
            dz_ext0 = dz0 - 1 - SQUISH3
            xsv_ext0 = xsb + 1
            ysv_ext0 = ysb - 1
            zsv_ext0 = zsb + 1
        else:
            dx_ext0 = dx0 - 1 - SQUISH3
            dy_ext0 = dy0 - 1 - SQUISH3
            dz_ext0 = dz0 + 1 - SQUISH3
            xsv_ext0 = xsb + 1
            ysv_ext0 = ysb + 1
            zsv_ext0 = zsb - 1

        # One contribution is a permutation of (0,0,2)
        dx_ext1 = dx0 - 2 * SQUISH3
        dy_ext1 = dy0 - 2 * SQUISH3
        dz_ext1 = dz0 - 2 * SQUISH3
        xsv_ext1 = xsb
        ysv_ext1 = ysb
        zsv_ext1 = zsb
        if (c2 & 0x01) != 0:
            dx_ext1 -= 2
            xsv_ext1 += 2
        elif (c2 & 0x02) != 0:
            dy_ext1 -= 2
            ysv_ext1 += 2
        else:
            dz_ext1 -= 2
            zsv_ext1 += 2

    return (xsv_ext0, ysv_ext0, zsv_ext0, dx_ext0, dy_ext0, dz_ext0,
            xsv_ext1, ysv_ext1, zsv_ext1, dx_ext1, dy_ext1, dz_ext1)


@perenv.rule(inline=False)
def noise3(perm: np.ndarray, x: float, y: float, z: float) -> float:
    """``OpenSimplex.noise3(x, y, z)`` for the permutation ``perm`` (:func:`init_perm`): the
    body of ``opensimplex.internals._noise3`` (its comments too), its choice of the two
    extra lattice points in :func:`lower_extras`, :func:`upper_extras` and
    :func:`octahedron_extras` (one function of 450 lines is more decisions than a reader
    follows), each lattice point's term a :func:`contribution`."""
    # Place input coordinates on simplectic honeycomb.
    stretch_offset = (x + y + z) * STRETCH3
    xs = x + stretch_offset
    ys = y + stretch_offset
    zs = z + stretch_offset

    # Floor to get simplectic honeycomb coordinates of rhombohedron (stretched cube)
    # super-cell origin.
    xsb = floor(xs)
    ysb = floor(ys)
    zsb = floor(zs)

    # Skew out to get actual coordinates of rhombohedron origin. We'll need these later.
    squish_offset = (xsb + ysb + zsb) * SQUISH3
    xb = xsb + squish_offset
    yb = ysb + squish_offset
    zb = zsb + squish_offset

    # Compute simplectic honeycomb coordinates relative to rhombohedral origin.
    xins = xs - xsb
    yins = ys - ysb
    zins = zs - zsb

    # Sum those together to get a value that determines which region we're in.
    in_sum = xins + yins + zins

    # Positions relative to origin point.
    dx0 = x - xb
    dy0 = y - yb
    dz0 = z - zb

    value = 0
    if in_sum <= 1:  # We're inside the tetrahedron (3-Simplex) at (0,0,0)
        (xsv_ext0, ysv_ext0, zsv_ext0, dx_ext0, dy_ext0, dz_ext0,
         xsv_ext1, ysv_ext1, zsv_ext1, dx_ext1, dy_ext1, dz_ext1) = lower_extras(
            xsb, ysb, zsb, xins, yins, zins, in_sum, dx0, dy0, dz0)

        # Contribution (0,0,0)
        value += contribution(perm, xsb + 0, ysb + 0, zsb + 0, dx0, dy0, dz0)

        # Contribution (1,0,0)
        dx1 = dx0 - 1 - SQUISH3
        dy1 = dy0 - 0 - SQUISH3
        dz1 = dz0 - 0 - SQUISH3
        value += contribution(perm, xsb + 1, ysb + 0, zsb + 0, dx1, dy1, dz1)

        # Contribution (0,1,0)
        dx2 = dx0 - 0 - SQUISH3
        dy2 = dy0 - 1 - SQUISH3
        dz2 = dz1
        value += contribution(perm, xsb + 0, ysb + 1, zsb + 0, dx2, dy2, dz2)

        # Contribution (0,0,1)
        dx3 = dx2
        dy3 = dy1
        dz3 = dz0 - 1 - SQUISH3
        value += contribution(perm, xsb + 0, ysb + 0, zsb + 1, dx3, dy3, dz3)
    elif in_sum >= 2:  # We're inside the tetrahedron (3-Simplex) at (1,1,1)
        (xsv_ext0, ysv_ext0, zsv_ext0, dx_ext0, dy_ext0, dz_ext0,
         xsv_ext1, ysv_ext1, zsv_ext1, dx_ext1, dy_ext1, dz_ext1) = upper_extras(
            xsb, ysb, zsb, xins, yins, zins, in_sum, dx0, dy0, dz0)

        # Contribution (1,1,0)
        dx3 = dx0 - 1 - 2 * SQUISH3
        dy3 = dy0 - 1 - 2 * SQUISH3
        dz3 = dz0 - 0 - 2 * SQUISH3
        value += contribution(perm, xsb + 1, ysb + 1, zsb + 0, dx3, dy3, dz3)

        # Contribution (1,0,1)
        dx2 = dx3
        dy2 = dy0 - 0 - 2 * SQUISH3
        dz2 = dz0 - 1 - 2 * SQUISH3
        value += contribution(perm, xsb + 1, ysb + 0, zsb + 1, dx2, dy2, dz2)

        # Contribution (0,1,1)
        dx1 = dx0 - 0 - 2 * SQUISH3
        dy1 = dy3
        dz1 = dz2
        value += contribution(perm, xsb + 0, ysb + 1, zsb + 1, dx1, dy1, dz1)

        # Contribution (1,1,1)
        dx0 = dx0 - 1 - 3 * SQUISH3
        dy0 = dy0 - 1 - 3 * SQUISH3
        dz0 = dz0 - 1 - 3 * SQUISH3
        value += contribution(perm, xsb + 1, ysb + 1, zsb + 1, dx0, dy0, dz0)
    else:  # We're inside the octahedron (Rectified 3-Simplex) in between.
        a_point, a_is_further_side, b_point, b_is_further_side = octahedron_closest(
            xins, yins, zins)
        (xsv_ext0, ysv_ext0, zsv_ext0, dx_ext0, dy_ext0, dz_ext0,
         xsv_ext1, ysv_ext1, zsv_ext1, dx_ext1, dy_ext1, dz_ext1) = octahedron_extras(
            a_point, a_is_further_side, b_point, b_is_further_side, xsb, ysb, zsb, dx0,
            dy0, dz0)

        # Contribution (1,0,0)
        dx1 = dx0 - 1 - SQUISH3
        dy1 = dy0 - 0 - SQUISH3
        dz1 = dz0 - 0 - SQUISH3
        value += contribution(perm, xsb + 1, ysb + 0, zsb + 0, dx1, dy1, dz1)

        # Contribution (0,1,0)
        dx2 = dx0 - 0 - SQUISH3
        dy2 = dy0 - 1 - SQUISH3
        dz2 = dz1
        value += contribution(perm, xsb + 0, ysb + 1, zsb + 0, dx2, dy2, dz2)

        # Contribution (0,0,1)
        dx3 = dx2
        dy3 = dy1
        dz3 = dz0 - 1 - SQUISH3
        value += contribution(perm, xsb + 0, ysb + 0, zsb + 1, dx3, dy3, dz3)

        # Contribution (1,1,0)
        dx4 = dx0 - 1 - 2 * SQUISH3
        dy4 = dy0 - 1 - 2 * SQUISH3
        dz4 = dz0 - 0 - 2 * SQUISH3
        value += contribution(perm, xsb + 1, ysb + 1, zsb + 0, dx4, dy4, dz4)

        # Contribution (1,0,1)
        dx5 = dx4
        dy5 = dy0 - 0 - 2 * SQUISH3
        dz5 = dz0 - 1 - 2 * SQUISH3
        value += contribution(perm, xsb + 1, ysb + 0, zsb + 1, dx5, dy5, dz5)

        # Contribution (0,1,1)
        dx6 = dx0 - 0 - 2 * SQUISH3
        dy6 = dy4
        dz6 = dz5
        value += contribution(perm, xsb + 0, ysb + 1, zsb + 1, dx6, dy6, dz6)

    # First extra vertex
    value += contribution(perm, xsv_ext0, ysv_ext0, zsv_ext0, dx_ext0, dy_ext0, dz_ext0)

    # Second extra vertex
    value += contribution(perm, xsv_ext1, ysv_ext1, zsv_ext1, dx_ext1, dy_ext1, dz_ext1)

    return value / NORM3
