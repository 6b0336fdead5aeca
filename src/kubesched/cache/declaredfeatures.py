"""The features each node declares (its status.declaredFeatures), as a column of the node table: one
bit per feature name some node declares, packed in 64-bit words, so "which nodes declare all of
these features" is one numpy comparison per word over the whole table.

Names are the table's own vocabulary, not a list of features kubesched knows: a node may declare
features no scheduler reads (a newer kubelet's), and a pod only ever asks for known ones, so a
subset test over every declared name answers as kube's over its known ones does. Names no node
declares any more are dropped once they outnumber the live ones (kubelet upgrades rename features).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

WORD_BITS = 64
COMPACT_SLACK = 64  # dead names tolerated beyond the live ones before the bits are renumbered


class DeclaredFeatures:
    __slots__ = ("bits", "by_row", "names", "refs", "vocab")

    def __init__(self, capacity: int) -> None:
        self.vocab: dict[str, int] = {}  # name -> bit
        self.names: list[str] = []  # bit -> name
        self.refs: list[int] = []  # bit -> rows declaring it
        self.by_row: list[tuple[str, ...]] = [() for _ in range(capacity)]
        self.bits = np.zeros((capacity, 1), dtype=np.uint64)

    def grow(self, capacity: int) -> None:
        extra = capacity - len(self.by_row)
        if extra > 0:
            self.by_row.extend(() for _ in range(extra))
            self.bits = np.vstack([self.bits, np.zeros((extra, self.bits.shape[1]), dtype=np.uint64)])

    def set(self, row: int, names: Sequence[str]) -> None:
        """The row's node now declares `names` (none: a node without the field, or a removed one)."""
        declared = tuple(dict.fromkeys(names))
        if declared == self.by_row[row]:
            return
        for name in self.by_row[row]:
            self.refs[self.vocab[name]] -= 1
        bits = [self._bit(name) for name in declared]  # first: a new name may add a word
        words = [0] * self.bits.shape[1]
        for bit in bits:
            self.refs[bit] += 1
            words[bit // WORD_BITS] |= 1 << (bit % WORD_BITS)
        self.bits[row, :] = np.array(words, dtype=np.uint64)
        self.by_row[row] = declared
        self._compact()

    def declaring(self, names: Iterable[str], size: int) -> np.ndarray:
        """For rows [0, size): whether the row's node declares every one of `names`."""
        masks = [0] * self.bits.shape[1]
        for name in names:
            bit = self.vocab.get(name)
            if bit is None or not self.refs[bit]:
                return np.zeros(size, dtype=bool)
            masks[bit // WORD_BITS] |= 1 << (bit % WORD_BITS)
        ok = np.ones(size, dtype=bool)
        for word, mask in enumerate(masks):
            if mask:
                want = np.uint64(mask)
                ok &= (self.bits[:size, word] & want) == want
        return ok

    def missing(self, row: int, names: Iterable[str]) -> list[str]:
        """Those of `names` the row's node does not declare, in their order."""
        have = set(self.by_row[row])
        return [name for name in names if name not in have]

    def _bit(self, name: str) -> int:
        bit = self.vocab.get(name)
        if bit is None:
            bit = len(self.names)
            self.vocab[name] = bit
            self.names.append(name)
            self.refs.append(0)
            if bit // WORD_BITS >= self.bits.shape[1]:
                self.bits = np.hstack([self.bits, np.zeros((self.bits.shape[0], 1), dtype=np.uint64)])
        return bit

    def _compact(self) -> None:
        live = [name for name, refs in zip(self.names, self.refs, strict=True) if refs]
        if len(self.names) - len(live) <= len(live) + COMPACT_SLACK:
            return
        rows = self.by_row
        self.vocab, self.names, self.refs = {}, [], []
        self.bits = np.zeros((len(rows), max(1, -(-len(live) // WORD_BITS))), dtype=np.uint64)
        self.by_row = [() for _ in rows]
        for name in live:
            self._bit(name)
        for row, declared in enumerate(rows):
            if declared:
                self.set(row, declared)
