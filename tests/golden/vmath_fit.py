#!/usr/bin/python3
"""Fits the two polynomials of normal_cdf in src/ops/vmath.hpp (GELU, erf) and prints them.

    /usr/bin/python3 tests/golden/vmath_fit.py

P: (Phi(x) - 1/2) / x as a polynomial of degree 5 in s = x^2, for |x| < 1.
R: Phi(-a) e^(a^2/2) as a polynomial of degree 8 in t = 1 / (1 + a/4), for 1 <= a <= 14.5 (beyond,
   Phi(-a) underflows in float). Both are least-squares fits of the relative error at Chebyshev
   nodes, the reference computed with mpmath at 40 digits. Prints the coefficients highest
   first, as the Horner steps in vmath.hpp use them, and the fits' relative errors (the float
   evaluation's errors are measured by tests/test_ops_vmath.cpp).
"""

import mpmath as mp
import numpy as np

mp.mp.dps = 40


def phi_minus(a):
    return mp.erfc(a / mp.sqrt(2)) / 2


def chebyshev_nodes(lo, hi, n):
    return [lo + (hi - lo) * (1 - mp.cos(mp.pi * (i + 0.5) / n)) / 2 for i in range(n)]


def relative_fit(xs, values, degree):
    """Coefficients c (lowest first) minimising sum((poly(x) / value - 1)^2)."""
    x = np.array([float(v) for v in xs])
    v = np.array([float(v) for v in values])
    a = np.vander(x, degree + 1, increasing=True) / v[:, None]
    c, *_ = np.linalg.lstsq(a, np.ones_like(v), rcond=None)
    err = max(abs(np.polyval(c[::-1], xi) / vi - 1) for xi, vi in zip(x, v))
    return c, err


def main():
    ss = chebyshev_nodes(0, 1, 400)
    central = [1 / mp.sqrt(2 * mp.pi) if s == 0 else (mp.erf(mp.sqrt(s) / mp.sqrt(2)) / 2) / mp.sqrt(s) for s in ss]
    p, err_p = relative_fit(ss, central, 5)
    aa = chebyshev_nodes(1.0, 14.5, 2000)
    r, err_r = relative_fit([1 / (1 + a / 4) for a in aa], [phi_minus(a) * mp.exp(a * a / 2) for a in aa], 8)
    for name, c, err in (("P", p, err_p), ("R", r, err_r)):
        print(f"{name} (relative error of the fit {err:.2e}), highest degree first:")
        print(",\n".join(f"    {x:.9e}f" for x in c[::-1]))


if __name__ == "__main__":
    main()
