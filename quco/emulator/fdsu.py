"""Cycles of fdiv.s / fsqrt.s on CV32E40P's divider, from the operands.

CV32E40P v1.8 takes its FPU from CVFPU, whose single-precision divide and square root is
`fpnew_divsqrt_th_32` around T-Head's E906 FDSU (openhwgroup/cv32e40p, rtl/vendor/
pulp_platform_fpnew: src/fpnew_divsqrt_th_32.sv and vendor/opene906/E906_RTL_FACTORY/
gen_rtl/fdsu/rtl/*.v, the copy at commit cd48ad0c8f42753d2731ddecb26395d241b96575). What
that RTL does, per operation, from the cycle it accepts it:

- pa_fdsu_special.v: an operand that is zero, infinite or NaN, and a square root of a
  negative number, give a result without the SRT loop (`ex1_srt_skip`); pa_fpu_dp.v
  registers it, so it is ready one cycle later.
- pa_fdsu_ctrl.v, main state machine IDLE -> [WFI2] -> ITER x n -> RND -> PACK: the
  result is handed out in PACK (the write-back grant is tied to the valid). WFI2 is one
  extra cycle when the divisor is subnormal (`fdsu_dn_stall`: it is normalised in a second
  pass). ITER runs radix-4 SRT rounds, a counter loaded with 14 for single precision, and
  stops after the round in which the counter is 0 (15 rounds), or the round that starts
  with a partial remainder of exactly 0 (`srt_remainder_zero`: the quotient so far is
  exact), or at once when the exponents say overflow or total underflow (`ex2_of`,
  `ex2_uf_srt_skip` in pa_fdsu_srt_single.v).
- pa_fdsu_srt_single.v: the remainder recurrence, digit selection and on-the-fly root;
  pa_fdsu_prepare.v: the first remainder and the divisor. The rounds are simulated below
  bit for bit on the widths of the RTL (32-bit remainder, 24-bit divisor, 30-bit root),
  which is what decides when the remainder reaches 0.

So the divider takes, from acceptance to its result, 1 cycle for a special case and
[1 +] n + 2 otherwise. The core sees it later by the output register (CVFPU PipeRegs of
the DIVSQRT group: 1 in cv32e40p_top) and its write-back; `HANDOFF` cycles in all, set so
that a full 15-round divide costs the manual's 19 ("Single Precision FP Division and
Square-Root: 1..19", docs/source/pipeline.rst), the figure cv32e40p-worst charges.
"""
from __future__ import annotations

import functools

ROUNDS = 15     # pa_fdsu_ctrl.v: srt_cnt_ini = 14 for single precision, last round at 0
HANDOFF = 2     # cycles from the FDSU's PACK state until a dependent instruction issues
FULL = ROUNDS + 2 + HANDOFF  # 19: the manual's maximum
MASK32, MASK30 = (1 << 32) - 1, (1 << 30) - 1
# Radix-4 digit selection bounds (-(1/32)S1, -(1/32)S2 in the RTL's table), indexed by the
# divisor's (or root's) top four bits; 0 is the first square-root round's "10" case, and
# 1..7 cannot occur for a normalised divisor (the RTL's default row).
BOUNDS = {0: (-12, -47), 8: (-7, -25), 9: (-7, -28), 10: (-8, -31), 11: (-9, -33), 12: (-9, -36),
          13: (-10, -39), 14: (-11, -41), 15: (-12, -47)}


def _fields(bits: int) -> tuple[int, int, int]:
    """(sign, biased exponent, fraction) of a binary32 pattern."""
    return bits >> 31 & 1, bits >> 23 & 0xFF, bits & 0x7F_FFFF


def _special(exponent: int, fraction: int) -> bool:
    """Zero, infinity or NaN: pa_fdsu_special.v answers without iterating."""
    return exponent == 0xFF or (exponent == 0 and fraction == 0)


def _normalised(exponent: int, fraction: int) -> tuple[int, int]:
    """(24-bit significand with its leading 1 at bit 23, exponent as a biased value that may
    go below 1): a subnormal is normalised first (pa_fdsu_ff1.v finds its leading one)."""
    if exponent:
        return 1 << 23 | fraction, exponent
    shift = 24 - fraction.bit_length()
    return fraction << shift, 1 - shift


def _digit(select: int, k: int) -> int:
    """Magnitude of the next quotient digit (0, 1, 2) from the 8-bit remainder estimate."""
    b1, b2 = BOUNDS.get(k, BOUNDS[8])
    if (select + b1) & 0x80:
        return 0
    return 1 if (select + b2) & 0x80 else 2


def _shift(rem: int) -> int:
    """4 x remainder as the RTL forms it: bit 31 kept, bits 28..0 moved up by two."""
    return rem & 0x8000_0000 | (rem & 0x1FFF_FFFF) << 2


def _divide_rounds(dividend: int, divisor: int) -> int:
    """SRT rounds of a divide of two normalised significands (pa_fdsu_srt_single.v)."""
    rem, k = dividend << 3, divisor >> 20 & 0xF   # 1/8 <= remainder < 1/4, 1/2 <= divisor < 1
    for n in range(1, ROUNDS + 1):
        if rem == 0:  # the round that starts from a zero remainder is the last
            return n
        negative = rem >> 29 & 1
        select = (~rem if negative else rem) >> 22 & 0xFF
        d = _digit(select, k)
        if d:
            step = divisor << (4 + d)  # divisor x 1 or x 2 at the remainder's scale
            rem = (_shift(rem) + (step if negative else -step)) & MASK32
        else:
            rem = _shift(rem)
    return ROUNDS


def _sqrt_rounds(significand: int, odd: bool) -> int:
    """SRT rounds of a square root (pa_fdsu_srt_single.v, root digits formed on the fly)."""
    rem = significand << (3 if odd else 2)  # 1/16 <= remainder < 1/4
    root, root_minus, unit = 0, 0, 1 << 28   # root, root - one unit, the weight of this digit
    for n in range(1, ROUNDS + 1):
        if rem == 0:
            return n
        negative = rem >> 29 & 1
        if n == 1:  # the first round reads 8 x remainder and a fixed K
            select, k = (negative << 7) | (rem >> 21 & 0x7F), 0b1010
        else:
            select, k = (~rem if negative else rem) >> 22 & 0xFF, root >> 25 & 0xF
        d = _digit(select, k)
        u1, u2 = unit, unit << 1 & MASK30
        base = root_minus if negative else root
        if d == 2:
            new_root, new_minus = base | u2, base | u1
        elif d == 1:
            new_root, new_minus = base | (u1 | u2 if negative else u1), base | (u2 if negative else 0)
        else:
            new_root, new_minus = root, root_minus | u1 | u2
        # remainder -/+ (2 x root x digit + digit^2 x unit), at the remainder's scale
        if negative:
            add = {1: root_minus | unit << 1 | unit | unit >> 1, 2: root_minus << 1 | unit << 2 | unit << 1}
        else:
            add = {1: ~(root | unit >> 1) & MASK32, 2: ~(root << 1 | unit << 1) & MASK32}
        shifted = _shift(rem)
        rem = (shifted + add[d] + (0 if negative else 1)) & MASK32 if d else shifted
        root, root_minus, unit = new_root, new_minus, unit >> 2
    return ROUNDS


def is_fdiv_or_fsqrt(word: int) -> bool:
    """fdiv.s (funct7 0x0C) or fsqrt.s (funct7 0x2C, rs2 0) of RV32F."""
    return word & 0x7F == 0x53 and (word >> 25 == 0x0C or (word >> 25 == 0x2C and not word >> 20 & 31))


def cycles(word: int, a: int, b: int = 0) -> int:
    """Cycles from issue until a dependent instruction may issue, for fdiv.s (a / b) or
    fsqrt.s (of a), the operands given as binary32 bit patterns."""
    sqrt = word >> 25 == 0x2C
    return _cycles(sqrt, a, 0 if sqrt else b)


# The SRT rounds in Python cost about 10 us, and a timed launch runs its fdivs (3 on a
# Matrix-Matrix launch) on the same operands as the last launch of that kernel did: the
# answers, a pure function of the operands, are kept (the bound keeps the memory small).
@functools.lru_cache(maxsize=1 << 14)
def _cycles(sqrt: bool, a: int, b: int) -> int:
    sa, ea, fa = _fields(a)
    sb, eb, fb = _fields(b)
    if _special(ea, fa) or (sqrt and sa) or (not sqrt and _special(eb, fb)):
        return 1 + HANDOFF
    ma, xa = _normalised(ea, fa)
    if sqrt:
        return _sqrt_rounds(ma, not xa & 1) + 2 + HANDOFF
    mb, xb = _normalised(eb, fb)
    wait = 1 if eb == 0 else 0  # a subnormal divisor: WFI2, one more cycle
    diff = xa - xb              # the quotient's exponent before normalisation
    rounds = 1 if diff > 128 or diff < -150 else _divide_rounds(ma, mb)
    return wait + rounds + 2 + HANDOFF
