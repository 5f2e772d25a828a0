"""An independent reference for the tests: the formula evaluated with mpmath at 50 digits."""

import mpmath
import numpy as np


def exact_encoding(positions, d_model, base=10000):
    """PE[pos, j] from the formula of Vaswani et al. (2017, 3.5), in 50-digit arithmetic.

    Written from the paper's two equations, not from the package: column j uses
    exponent 2 * floor(j / 2) / d_model, sine for even j and cosine for odd j.
    """
    with mpmath.workdps(50):
        base = mpmath.mpf(base)
        rows = []
        for pos in positions:
            row = []
            for j in range(d_model):
                angle = mpmath.mpf(pos) / base ** (mpmath.mpf(2 * (j // 2)) / d_model)
                row.append(mpmath.sin(angle) if j % 2 == 0 else mpmath.cos(angle))
            rows.append(row)
        return np.array([[float(v) for v in row] for row in rows]).reshape(len(rows), d_model)
