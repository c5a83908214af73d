#!/usr/bin/env python3
"""Reference values of the standard normal functions, computed with mpmath at 60 digits.

Writes normal.csv: z, Phi(z), Phic(z) = 1 - Phi(z), phi(z), ln Phi(z); every value is the f64
nearest to the 60-digit result (Python's repr round-trips it exactly).
Phi is computed by mpmath's ncdf (an independent arbitrary-precision implementation), ln Phi from
the same 60-digit values, so nothing here uses the Rust code under test.

Rerun (needs `pip install mpmath`): python3 theory/reference/normal_table.py
"""
import os
import random

from mpmath import mp, mpf, ncdf, npdf, log, log1p

mp.dps = 60

zs = [mpf(k) / 4 for k in range(-160, 41)]          # -40 .. 10 step 0.25
rng = random.Random(20261122)
zs += [mpf(round(rng.uniform(-38.0, 9.0), 6)) for _ in range(200)]
zs += [mpf(v) for v in ("-1e5", "-1e4", "-1000", "-100", "-50", "-45", "-38.4", "12", "20", "37", "38")]

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "normal.csv")
with open(out, "w") as f:
    f.write("z,cdf,sf,pdf,log_cdf\n")
    for z in sorted(set(zs)):
        phi = ncdf(z)
        # ln Phi = ln1p(-Phic) for z > 0, where Phi rounds to 1 even at 60 digits.
        log_phi = log1p(-ncdf(-z)) if z > 0 else log(phi)
        row = [z, phi, ncdf(-z), npdf(z), log_phi]
        f.write(",".join(repr(float(v)) for v in row) + "\n")
print("wrote", out, len(set(zs)), "rows")
