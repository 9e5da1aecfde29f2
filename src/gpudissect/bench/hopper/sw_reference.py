"""CPU side of the Smith-Waterman benchmark: BLOSUM62, amino-acid background frequencies, the
sequence generator, query profiles and reference scores (pure numpy / Python, no CUDA).

Scoring follows Luo et al. (000) §8.2, who ran CUDASW++ 4.0 with its defaults: BLOSUM62 over the
20 standard amino acids, gap open alpha = 11 and gap extension beta = 1 in the recurrences

    E(i,j) = max(E(i-1,j) - beta, H(i-1,j) - alpha)
    F(i,j) = max(F(i,j-1) - beta, H(i,j-1) - alpha)
    H(i,j) = max(H(i-1,j-1) + sigma(q_i, s_j), E(i,j), F(i,j), 0)

so a gap of length k costs alpha + (k - 1) * beta; the score is the maximum of H.
"""

from __future__ import annotations

import numpy as np

AMINO = "ARNDCQEGHILKMFPSTWYV"  # NCBI order of the 20 standard amino acids
GAP_OPEN = 11  # alpha
GAP_EXTEND = 1  # beta

# BLOSUM62 (Henikoff & Henikoff 1992), rows and columns in AMINO order.
_BLOSUM62_TEXT = """
   A  R  N  D  C  Q  E  G  H  I  L  K  M  F  P  S  T  W  Y  V
A  4 -1 -2 -2  0 -1 -1  0 -2 -1 -1 -1 -1 -2 -1  1  0 -3 -2  0
R -1  5  0 -2 -3  1  0 -2  0 -3 -2  2 -1 -3 -2 -1 -1 -3 -2 -3
N -2  0  6  1 -3  0  0  0  1 -3 -3  0 -2 -3 -2  1  0 -4 -2 -3
D -2 -2  1  6 -3  0  2 -1 -1 -3 -4 -1 -3 -3 -1  0 -1 -4 -3 -3
C  0 -3 -3 -3  9 -3 -4 -3 -3 -1 -1 -3 -1 -2 -3 -1 -1 -2 -2 -1
Q -1  1  0  0 -3  5  2 -2  0 -3 -2  1  0 -3 -1  0 -1 -2 -1 -2
E -1  0  0  2 -4  2  5 -2  0 -3 -3  1 -2 -3 -1  0 -1 -3 -2 -2
G  0 -2  0 -1 -3 -2 -2  6 -2 -4 -4 -2 -3 -3 -2  0 -2 -2 -3 -3
H -2  0  1 -1 -3  0  0 -2  8 -3 -3 -1 -2 -1 -2 -1 -2 -2  2 -3
I -1 -3 -3 -3 -1 -3 -3 -4 -3  4  2 -3  1  0 -3 -2 -1 -3 -1  3
L -1 -2 -3 -4 -1 -2 -3 -4 -3  2  4 -2  2  0 -3 -2 -1 -2 -1  1
K -1  2  0 -1 -3  1  1 -2 -1 -3 -2  5 -1 -3 -1  0 -1 -3 -2 -2
M -1 -1 -2 -3 -1  0 -2 -3 -2  1  2 -1  5  0 -2 -1 -1 -1 -1  1
F -2 -3 -3 -3 -2 -3 -3 -3 -1  0  0 -3  0  6 -4 -2 -2  1  3 -1
P -1 -2 -2 -1 -3 -1 -1 -2 -2 -3 -3 -1 -2 -4  7 -1 -1 -4 -3 -2
S  1 -1  1  0 -1  0  0  0 -1 -2 -2  0 -1 -2 -1  4  1 -3 -2 -2
T  0 -1  0 -1 -1 -1 -1 -2 -2 -1 -1 -1 -1 -2 -1  1  5 -2 -2  0
W -3 -3 -4 -4 -2 -2 -3 -2 -2 -3 -2 -3 -1  1 -4 -3 -2 11  2 -3
Y -2 -2 -2 -3 -2 -1 -2 -3  2 -1 -1 -2 -1  3 -3 -2 -2  2  7 -1
V  0 -3 -3 -3 -1 -2 -2 -3 -3  3  1 -2  1 -1 -2 -2  0 -3 -1  4
"""


def _parse_matrix(text: str) -> np.ndarray:
    lines = [ln.split() for ln in text.strip().splitlines()]
    cols = lines[0]
    if "".join(cols) != AMINO or "".join(ln[0] for ln in lines[1:]) != AMINO:
        raise ValueError("matrix rows/columns are not in AMINO order")
    return np.array([[int(v) for v in ln[1:]] for ln in lines[1:]], dtype=np.int32)


BLOSUM62 = _parse_matrix(_BLOSUM62_TEXT)

# Background amino-acid frequencies of Robinson & Robinson (1991, PNAS 88:8880), the composition
# NCBI BLAST uses for random protein sequences; per mille, AMINO order (they sum to 1000).
BACKGROUND_PERMILLE = np.array(
    [
        78.05,
        51.29,
        44.87,
        53.64,
        19.25,
        42.64,
        62.95,
        73.77,
        21.99,
        51.42,
        90.19,
        57.44,
        22.43,
        38.56,
        52.03,
        71.20,
        58.41,
        13.30,
        32.16,
        64.41,
    ]
)
BACKGROUND = BACKGROUND_PERMILLE / BACKGROUND_PERMILLE.sum()

# Query lengths of the 20 UniProt queries of the SWIPE / CUDASW++ benchmarks (000 §8.2 gives only
# "20 queries, 144 to 5478"): P02232 144, P05013 189, P14942 222, P07327 375, P01008 464,
# P03435 567, P42357 657, P21177 729, Q38941 850, P27895 1000, P07756 1500, P04775 2005,
# P19096 2504, P28167 3005, P0C6B8 3564, P20930 4061, P08519 4548, Q7TMA5 4743, P33450 5147,
# Q9UKN1 5478. The real queries are not used: queries of these lengths are generated like the
# database.
QUERY_LENGTHS = [
    144,
    189,
    222,
    375,
    464,
    567,
    657,
    729,
    850,
    1000,
    1500,
    2005,
    2504,
    3005,
    3564,
    4061,
    4548,
    4743,
    5147,
    5478,
]

# Score of the padding rows of a query profile (rows beyond the query, up to a whole pass): any
# negative value keeps them below the best real cell (a padding cell's H comes from a real cell
# minus a positive amount), and this one keeps every intermediate inside s16.
PAD_SCORE = -64


def encode(seq: str) -> np.ndarray:
    """'ARND...' -> residue codes 0..19 (uint8)."""
    lut = {c: i for i, c in enumerate(AMINO)}
    try:
        return np.array([lut[c] for c in seq.upper()], dtype=np.uint8)
    except KeyError as e:
        raise ValueError(f"not one of the 20 standard amino acids: {e}") from None


def decode(codes: np.ndarray) -> str:
    return "".join(AMINO[int(c)] for c in codes)


def _sampling_table(bits: int = 16) -> np.ndarray:
    """2**bits residue codes in background proportions: a uniform index into it draws a residue
    (each frequency rounded to 1/2**bits, largest-remainder rounding so the table is full)."""
    size = 1 << bits
    exact = BACKGROUND * size
    counts = np.floor(exact).astype(np.int64)
    short = size - int(counts.sum())
    counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return np.repeat(np.arange(len(AMINO), dtype=np.uint8), counts)


def generate_sequences(count: int, length: int, seed: int, chunk: int = 1 << 16) -> np.ndarray:
    """`count` random sequences of `length` residues drawn i.i.d. from the background
    frequencies; (count, length) uint8, reproducible from `seed`."""
    table = _sampling_table()
    rng = np.random.default_rng(seed)
    out = np.empty((count, length), dtype=np.uint8)
    for s in range(0, count, chunk):
        e = min(count, s + chunk)
        out[s:e] = table[rng.integers(0, table.size, size=(e - s, length), dtype=np.uint16)]
    return out


def generate_query(length: int, seed: int) -> np.ndarray:
    return generate_sequences(1, length, seed)[0]


def query_profile(query: np.ndarray, rows: int, matrix: np.ndarray = BLOSUM62, pad: int = PAD_SCORE) -> np.ndarray:
    """sigma(q_i, letter) as a (20, rows) int32 table; rows >= len(query), the rest is `pad`."""
    if rows < len(query):
        raise ValueError("profile shorter than the query")
    prof = np.full((len(AMINO), rows), pad, dtype=np.int32)
    prof[:, : len(query)] = matrix[:, query].astype(np.int32)  # matrix is symmetric: [letter, q_i]
    return prof


def sw_score_scalar(
    query: np.ndarray,
    subject: np.ndarray,
    matrix: np.ndarray = BLOSUM62,
    gap_open: int = GAP_OPEN,
    gap_extend: int = GAP_EXTEND,
) -> int:
    """Textbook Gotoh recurrences cell by cell (slow; the definition the fast versions are tested
    against)."""
    m, n = len(query), len(subject)
    neg = -(1 << 30)
    h_prev = [0] * (n + 1)  # H(i-1, .)
    e_prev = [neg] * (n + 1)  # E(i-1, .)
    best = 0
    for i in range(1, m + 1):
        h_cur, e_cur = [0] * (n + 1), [neg] * (n + 1)
        f = neg
        qi = int(query[i - 1])
        for j in range(1, n + 1):
            e_cur[j] = max(e_prev[j] - gap_extend, h_prev[j] - gap_open)
            f = max(f - gap_extend, h_cur[j - 1] - gap_open)
            h = max(h_prev[j - 1] + int(matrix[qi, int(subject[j - 1])]), e_cur[j], f, 0)
            h_cur[j] = h
            best = max(best, h)
        h_prev, e_prev = h_cur, e_cur
    return best


def sw_scores(
    query: np.ndarray,
    subjects: np.ndarray,
    matrix: np.ndarray = BLOSUM62,
    gap_open: int = GAP_OPEN,
    gap_extend: int = GAP_EXTEND,
) -> np.ndarray:
    """Best local score of `query` against each row of `subjects` (K, n), vectorised over the subjects
    and the query. The score is symmetric in the two sequences (gaps cost the same along both; sigma
    read as matrix[q, s] either way), so the rows of the DP here are the subject's residues (n steps,
    not len(query)) and a row spans the query. F along a row is a prefix maximum: with alpha >= beta a
    gap that opens from a cell whose H came from F never beats extending that F, so
    F(i,j) = max_{k<j} (H'(i,k) - alpha - (j-1-k) beta) with H' = max(diag + sigma, E, 0)."""
    if gap_open < gap_extend:
        raise ValueError("the row-scan form needs gap_open >= gap_extend")
    subjects = np.atleast_2d(np.asarray(subjects))
    k, n = subjects.shape
    m = len(query)
    # int32 where no value can come near its range (every H is below the best of min(m, n) matches)
    bound = (min(m, n) + 1) * (int(np.abs(matrix).max()) + gap_open) + (m + n + 1) * gap_extend
    dt = np.int32 if bound < 1 << 27 else np.int64
    neg = dt(-(1 << 29) if dt is np.int32 else -(1 << 40))
    prof = np.ascontiguousarray(matrix.T.astype(dt)[:, np.asarray(query, np.intp)])  # [s residue, j] = sigma(q_j, s)
    h_prev = np.zeros((k, m + 1), dt)  # H of the previous subject residue, column 0 the boundary
    e = np.full((k, m), neg, dt)
    ramp = np.arange(m, dtype=dt) * dt(gap_extend)  # k * beta for column k (0-based)
    shift = ramp[1:] + dt(gap_open - gap_extend)  # F(j) = g(j-1) - shift(j)
    hp, g, tmp, best = (np.empty((k, m), dt) for _ in range(4))
    best[:] = 0
    for i in range(n):
        np.subtract(e, gap_extend, out=e)  # E(i, j) = max(E(i-1, j) - beta, H(i-1, j) - alpha)
        np.maximum(e, np.subtract(h_prev[:, 1:], gap_open, out=tmp), out=e)
        np.add(h_prev[:, :-1], prof[subjects[:, i]], out=hp)  # H' = max(diag + sigma, E, 0)
        np.maximum(np.maximum(hp, e, out=hp), 0, out=hp)
        np.maximum.accumulate(np.add(hp, ramp, out=g), axis=1, out=g)  # max_{k<=j} H'(k) + k beta
        h = h_prev[:, 1:]  # this row's H replaces the previous one (its diagonal and E are read above)
        h[:, 0] = hp[:, 0]
        np.maximum(hp[:, 1:], np.subtract(g[:, :-1], shift, out=tmp[:, 1:]), out=h[:, 1:])
        np.maximum(best, h, out=best)
    return best.max(axis=1).astype(np.int64)
