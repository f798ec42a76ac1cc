"""SipHash-2-4 of many strings at once, with numpy only.

Seeded draws per job (time limits, model classes) hash job ids with the
hash pandas uses for ``pandas.util.hash_array`` on strings: SipHash-2-4 of
the UTF-8 bytes under the fixed key ``"0123456789123456"``, then a 64-bit
finaliser (Aumasson & Bernstein, "SipHash: a fast short-input PRF",
INDOCRYPT 2012). Computing it here keeps every draw as it was while a replay
no longer imports pandas, a sixth of a short command's start-up.

Strings of one byte length are hashed together: their 8-byte words are the
columns of one array, so the rounds are a few dozen array operations for
any number of ids.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# pandas' default hash key (pandas.core.util.hashing._default_hash_key).
DEFAULT_KEY = b"0123456789123456"
_U64 = np.uint64
# The initialisation constants: "somepseudorandomlygeneratedbytes".
_INIT = (0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573)


def _rotl(x: np.ndarray, bits: int) -> np.ndarray:
    return (x << _U64(bits)) | (x >> _U64(64 - bits))


def _round(v: list[np.ndarray]) -> None:
    """One SipRound on the four state lanes, in place (wrapping uint64 arithmetic)."""
    v0, v1, v2, v3 = v
    v0 += v1
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 += v3
    v3 = _rotl(v3, 16) ^ v2
    v0 += v3
    v3 = _rotl(v3, 21) ^ v0
    v2 += v1
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    v[:] = [v0, v1, v2, v3]


def siphash24(data: Sequence[bytes], key: bytes = DEFAULT_KEY) -> np.ndarray:
    """SipHash-2-4 of each byte string (all of one length) as uint64."""
    n = len(data)
    if n == 0:
        return np.zeros(0, dtype=_U64)
    length = len(data[0])
    words = length // 8 + 1  # the last word holds the tail and the length byte
    buf = np.zeros((n, words * 8), dtype=np.uint8)
    buf[:, :length] = np.frombuffer(b"".join(data), dtype=np.uint8).reshape(n, length)
    buf[:, -1] = length & 0xFF
    m = buf.view("<u8").astype(_U64)  # [n, words], little-endian words
    k0, k1 = (int.from_bytes(key[i : i + 8], "little") for i in (0, 8))
    v = [np.full(n, c ^ k, dtype=_U64) for c, k in zip(_INIT, (k0, k1, k0, k1), strict=True)]
    for w in range(words):
        word = m[:, w]
        v[3] ^= word
        _round(v)
        _round(v)
        v[0] ^= word
    v[2] ^= _U64(0xFF)
    for _ in range(4):
        _round(v)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def finalise(x: np.ndarray) -> np.ndarray:
    """The 64-bit mix pandas applies to every hash it returns."""
    x = x ^ (x >> _U64(30))
    x = x * _U64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> _U64(27))
    x = x * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


def hash_strings(values: Sequence[object]) -> np.ndarray:
    """``pandas.util.hash_array(np.asarray(values, dtype=object))`` for strings, without pandas.

    Other values are hashed as their ``str``, as pandas does for them.
    """
    encoded = [(v if isinstance(v, str) else str(v)).encode("utf-8") for v in values]
    out = np.empty(len(encoded), dtype=_U64)
    by_length: dict[int, list[int]] = {}
    for i, b in enumerate(encoded):
        by_length.setdefault(len(b), []).append(i)
    with np.errstate(over="ignore"):
        for rows in by_length.values():
            out[rows] = siphash24([encoded[i] for i in rows])
        return finalise(out)
