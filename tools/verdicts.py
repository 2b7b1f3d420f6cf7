"""The studies' statistics (tools/study-stats, examples/torch_lm/study.py): the 95 % t-interval
of per-seed values and a finding's verdict from the interval of its paired differences, where a
higher value is better. Standard library only."""
import math

# Two-sided 95 % Student t quantiles by degrees of freedom (1..30); beyond: normal.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042]


def interval(xs):
    """mean, sd, half-width of the 95 % t-interval (nan below 2 values)."""
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    t = T975[n - 2] if n - 1 <= len(T975) else 1.96
    return mean, sd, t * sd / math.sqrt(n)


def verdict(kind, lo, hi, margin):
    """The verdict on A against B from the interval (lo, hi) of A - B, higher being better:
    worse, better, equal (within +-margin), not_better (A - B <= margin), not_worse."""
    if math.isnan(lo):
        return "not distinguishable from noise (one seed)"
    m = margin
    yes, no = {
        "worse": (hi < 0, lo > 0),
        "better": (lo > 0, hi < 0),
        "equal": (-m <= lo and hi <= m, lo > m or hi < -m),
        "not_better": (hi <= m, lo > m),
        "not_worse": (lo >= -m, hi < -m),
    }[kind]
    return "reproduced" if yes else "refuted" if no else "not distinguishable from noise"
