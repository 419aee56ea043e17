"""``new_id``: random version-4 UUIDs, unique across threads and processes (spawned and forked),
with nothing in their digits that chance does not explain.

The statistical checks use bounds that hold without approximations (Hoeffding for bit counts,
a Chernoff bound for chi-square), each set so that a correct generator fails it with
probability below 1e-9: the tests are not flaky, and a biased or counter-like generator (the
earlier per-process prefix plus counter) fails every one of them by a wide margin.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import threading
import uuid
import warnings
from collections.abc import Callable

import pytest

from peerwire._ids import new_id

FAILURE = 1e-9
"""The most a correct generator may fail any one check here with."""

PER_THREAD = 10_000
THREADS = 8
PER_PROCESS = 30_000
HEX = "0123456789abcdef"
# The digits of the id (dashes removed) that are wholly random: all but the version (12) and
# the variant digit (16), which keeps two random bits.
RANDOM_DIGITS = [p for p in range(32) if p not in (12, 16)]


def _mint(count: int) -> list[str]:
    return [new_id() for _ in range(count)]


def _in_processes(method: str, processes: int) -> list[list[str]]:
    context = multiprocessing.get_context(method)
    with warnings.catch_warnings():
        # Python 3.12+ warns about fork() in a process with threads (pytest's, the test
        # run's own): the children here only mint ids.
        warnings.simplefilter("ignore", DeprecationWarning)
        with context.Pool(processes) as pool:
            return pool.map(_mint, [PER_PROCESS] * processes)


def _in_threads() -> list[list[str]]:
    results: list[list[str]] = [[] for _ in range(THREADS)]
    start = threading.Barrier(THREADS)

    def work(index: int) -> None:
        start.wait()
        results[index] = _mint(PER_THREAD)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.fixture(scope="module")
def sequences() -> list[list[str]]:
    """Ids as each minter made them, in order: 8 threads here, then 2 spawned and 2 forked
    processes (the parent mints before and after forking: a child must not repeat it)."""
    made = _in_threads()
    made += _in_processes("spawn", 2)
    before = _mint(10)  # the parent now holds a part-used batch the children inherit
    made += _in_processes("fork", 2)
    made.append(before + _mint(PER_PROCESS - 10))
    return made


def _all(sequences: list[list[str]]) -> list[str]:
    return [value for sequence in sequences for value in sequence]


def test_ids_are_canonical_version_4_uuids() -> None:
    for value in _mint(2_000):
        parsed = uuid.UUID(value)
        assert str(parsed) == value
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_ids_from_threads_and_processes_are_unique(sequences: list[list[str]]) -> None:
    everything = _all(sequences)
    assert len(everything) == THREADS * PER_THREAD + 5 * PER_PROCESS == 230_000
    assert len(set(everything)) == len(everything)


def test_version_and_variant_bits(sequences: list[list[str]]) -> None:
    blob = "".join(_all(sequences))
    count = len(blob) // 36
    assert blob.count("-") == 4 * count
    digits = blob.replace("-", "")
    assert digits[12::32] == "4" * count
    assert set(digits[16::32]) <= set("89ab")


def _digit_counts(sequences: list[list[str]]) -> tuple[int, dict[int, list[int]]]:
    """How many ids, and per digit position, how often each hex digit occurs there."""
    digits = "".join(_all(sequences)).replace("-", "")
    column = {p: digits[p::32] for p in range(32)}
    return len(digits) // 32, {p: [column[p].count(h) for h in HEX] for p in range(32)}


def _hoeffding(trials: int, failure: float) -> float:
    """The distance from trials/2 a count of fair coin flips exceeds with at most ``failure``."""
    return math.sqrt(trials * math.log(2 / failure) / 2)


def test_the_random_bits_are_one_half_of_the_time(sequences: list[list[str]]) -> None:
    count, counts = _digit_counts(sequences)
    # Every random bit position, then all random bits together.
    positions = {}
    for p in RANDOM_DIGITS:
        for bit in range(4):
            positions[(p, bit)] = sum(n for i, n in enumerate(counts[p]) if i >> bit & 1)
    variant = counts[16]
    for bit in range(2):  # the variant digit's two random bits (8, 9, a, b)
        positions[(16, bit)] = sum(n for i, n in enumerate(variant) if i >> bit & 1)
    assert len(positions) == 122
    bound = _hoeffding(count, FAILURE / len(positions))
    worst = max(abs(ones - count / 2) for ones in positions.values())
    assert worst < bound, f"a bit position is off balance by {worst:.0f} (bound {bound:.0f})"
    total = sum(positions.values())
    assert abs(total - 122 * count / 2) < _hoeffding(122 * count, FAILURE)


def _chi_square_bound(df: int, failure: float) -> float:
    """An ``x`` with P(chi-square(df) >= x) <= failure, from the Chernoff bound
    P(X >= x) <= (x/df)^(df/2) * exp((df - x)/2), valid for x > df."""

    def log_tail(x: float) -> float:
        return df / 2 * math.log(x / df) + (df - x) / 2

    low, high = float(df), float(df)
    while log_tail(high) > math.log(failure):
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if log_tail(middle) > math.log(failure) else (low, middle)
    return high


def _chi_square(observed: list[int]) -> float:
    expected = sum(observed) / len(observed)
    return sum((n - expected) ** 2 / expected for n in observed)


def test_digit_frequencies_pass_a_chi_square_test(sequences: list[list[str]]) -> None:
    _, counts = _digit_counts(sequences)
    checks = len(RANDOM_DIGITS) + 2
    for p in RANDOM_DIGITS:
        statistic = _chi_square(counts[p])
        assert statistic < _chi_square_bound(15, FAILURE / checks), (p, counts[p])
    variant = [counts[16][int(h, 16)] for h in "89ab"]
    assert _chi_square(variant) < _chi_square_bound(3, FAILURE / checks), variant
    pooled = [sum(counts[p][i] for p in RANDOM_DIGITS) for i in range(16)]
    assert _chi_square(pooled) < _chi_square_bound(15, FAILURE / checks), pooled


def _longest_shared_prefix_bound(pairs: int, failure: float) -> int:
    """The fewest leading hex digits no two of ``pairs`` random pairs share, except with
    probability <= failure (a union bound: each pair shares k digits with chance 16^-k)."""
    k = 1
    while pairs * 16.0**-k > failure:
        k += 1
    return k


def test_consecutive_ids_share_no_more_leading_digits_than_chance(
    sequences: list[list[str]],
) -> None:
    pairs = sum(len(sequence) - 1 for sequence in sequences)
    k = _longest_shared_prefix_bound(pairs, FAILURE)
    assert k <= 12  # the first 12 digits are random (the version digit comes next)
    width = k + 1  # the dash after the first 8 digits
    shared = sum(
        a[:width] == b[:width] for sequence in sequences for a, b in itertools.pairwise(sequence)
    )
    assert shared == 0


def test_the_statistical_checks_catch_a_counter() -> None:
    """The checks above fail the scheme ids replaced: a random prefix and a counter."""
    prefix = new_id()[:24]
    counted: Callable[[int], str] = lambda i: f"{prefix}{i + 1_000_000:012x}"  # noqa: E731
    sequence = [counted(i) for i in range(20_000)]
    _, counts = _digit_counts([sequence])
    p = RANDOM_DIGITS[0]
    assert _chi_square(counts[p]) > _chi_square_bound(15, FAILURE)
    width = _longest_shared_prefix_bound(len(sequence) - 1, FAILURE) + 1
    assert all(a[:width] == b[:width] for a, b in itertools.pairwise(sequence))
