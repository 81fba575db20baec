"""The number tokenizer of the from-scratch number models (brief Sec. 3.9, 5b, 6).

Pure Python: token ids are plain lists of ints (torch is imported lazily, only when a batch
helper is asked for tensors). The vocabulary is

* six special ids: ``PAD 0, BOS 1, EOS 2, OPERATOR 3, EQUALS 4, PART_SEP 5``;
* every digit string of length 1..k, ``id(s) = 6 + (sum_{j<len(s)} 10^j) - 1 + int(s)``
  (so ``"7" -> 13``, ``"07" -> 23``, ``"345" -> 461``; 10 / 110 / 1110 digit tokens for
  k = 1 / 2 / 3, vocab 16 / 116 / 1116);
* with index hints, ``3 * max_index`` hint ids after the digit tokens: the hint for digit
  position ``i`` of the ``p``-th written part is ``6 + n_digit_tokens + p * max_index + i``
  (three parts at most, the largest being ScientificNotation).

A number is written part by part (the parts and their alignments come from
``formats.FORMATS``, brief Sec. 3.1) with ``PART_SEP`` between parts. A sample is
``BOS a [OPERATOR b] EQUALS answer EOS`` and the loss is on the answer and the final EOS only.

Options (all follow the official ``src/number_model/tokenizer.py`` unless stated):

* ``split``: how right-aligned (integer-like) parts are chunked into <= k-digit tokens:
  ``"right"`` (from the right, the default: 12345, k=3 -> 12|345), ``"left"`` (from the left,
  a deliberately misaligned control: 123|45) or ``"random"`` (chunk lengths uniform in 1..k,
  drawn left to right; needs an rng). Left-aligned (decimal) parts are always chunked from the
  left, as in the official defaults.
* ``reverse``: ``"int"`` writes every integer-like part (Integer, Float int part, Fraction
  numerator and denominator, Scientific mantissa int part and exponent) back to front;
  ``"dec"`` does so for decimal parts; ``"each"`` for all parts; ``"total"`` additionally
  writes the parts in reverse order, i.e. the whole string reversed. Reversal happens before
  chunking, and the split direction applies to the string as written (the official order).
* ``pad_zeros``: in ``encode_sample``, each part of each *input* is zero-padded to the
  longest same-index part among the inputs (leading zeros for integer-like parts, trailing
  zeros for decimals); answers are never padded.
* ``index_hints``: a hint token before every digit token giving the position of the token's
  least significant digit inside its part, counted from the part's anchor: the units digit
  for integer-like parts (0 = units), the decimal point for decimal parts (0 = first decimal).
  Hints are added to inputs and answers; decoding ignores them.

Deliberate differences from the official code: (i) official Float decimal hints count from
the *right end* of the decimal part (Scientific mantissa decimals count from the point, as
here), so hints of floats with different decimal lengths do not line up there; (ii) the
official float decoder re-reverses the accumulated decimals after every token, which scrambles
reversed decimals spread over several tokens (all but the two-token k=1 case); (iii) the
official decoder returns number objects, which silently drop leading zeros and trailing
decimal zeros and reduce fractions; ours returns the digits as generated and leaves
normalisation to the metrics; (iv) the official optional random hint offsets ("shifted
start", applied to inputs but not answers) and "high" hint digit are not implemented.
"""

from __future__ import annotations

import functools
import operator
import random
from collections.abc import Sequence
from typing import Any

from papers.nupa.config import TOKENIZER_REVERSE_MODES as REVERSES
from papers.nupa.config import TOKENIZER_SPLITS as SPLITS
from papers.nupa.formats import RIGHT, check_type, split_parts

PAD, BOS, EOS, OPERATOR, EQUALS, PART_SEP = 0, 1, 2, 3, 4, 5
NUM_SPECIAL = 6
SPECIAL_NAMES = {
    PAD: "<PAD>",
    BOS: "<BOS>",
    EOS: "<EOS>",
    OPERATOR: "<OP>",
    EQUALS: "=",
    PART_SEP: "<SEP>",
}
IGNORE_INDEX = -100  # label value skipped by torch's cross-entropy
MAX_PARTS = 3  # ScientificNotation has the most parts; the hint block is sized for it

_REVERSE_ALIASES = {"no": "none"}  # the official code spells "none" as "no"
NO_INPUT = "none"  # the official type name of a missing second input
# Numbers whose ids a deterministic tokenizer keeps (least recently used dropped first): a
# training run re-encodes the same short numbers thousands of times (the toy's 2 x 1,500 steps
# see ~46,000 distinct ones), and the bound keeps a long paper-scale run from growing it.
ENCODE_CACHE_SIZE = 1 << 16


def num_digit_tokens(k: int) -> int:
    """Number of digit-string tokens of a k-digit vocabulary: 10 + 100 + ... + 10^k."""
    return sum(10**d for d in range(1, k + 1))


def max_answer_tokens(
    max_digits: int,
    k: int,
    n_parts: int = 1,
    *,
    index_hints: bool = False,
    random_split: bool = False,
) -> int:
    """Upper bound on the tokens generated for an answer, separators and final EOS included.

    ``max_digits`` is the total number of answer digits over its ``n_parts`` parts. Fixed
    chunking needs at most ``ceil`` per part, i.e. ``(D + n_parts (k-1)) // k`` tokens; random
    chunking may emit one digit per token. Hints double the digit tokens. Brief Sec. 5b uses
    the looser budget ``ceil((L+2)/k) + 3`` for Integer add; this is the tight bound.
    """
    if max_digits < 1 or k < 1 or n_parts < 1:
        raise ValueError("max_digits, k and n_parts must all be >= 1")
    if n_parts > max_digits:
        raise ValueError(f"{n_parts} non-empty parts need at least {n_parts} digits")
    if random_split:
        digit_tokens = max_digits
    else:
        digit_tokens = min(max_digits, (max_digits + n_parts * (k - 1)) // k)
    if index_hints:
        digit_tokens *= 2
    return digit_tokens + (n_parts - 1) + 1


def _chunk(written: str, k: int, mode: str, rng: random.Random | None) -> list[str]:
    """Cut a digit string (as written in the sequence) into pieces of at most k digits."""
    if mode == "left":
        return [written[i : i + k] for i in range(0, len(written), k)]
    if mode == "right":
        # The leftmost piece takes the remainder so that all other pieces are full and the
        # boundaries sit at fixed distances from the right end (the units digit).
        head = len(written) % k or k
        return [written[:head]] + [written[i : i + k] for i in range(head, len(written), k)]
    assert rng is not None  # checked by the caller, which knows the user-facing names
    pieces = []
    rest = written
    while rest:
        size = rng.randint(1, k)
        pieces.append(rest[:size])
        rest = rest[size:]
    return pieces


class NumberTokenizer:
    """Digit-chunk tokenizer of brief Sec. 3.9 (k-digit vocabulary, split, reverse, pad, hints).

    See the module docstring for the vocabulary layout and the meaning of every option.
    """

    def __init__(
        self,
        k: int,
        split: str = "right",
        reverse: str = "none",
        pad_zeros: bool = False,
        index_hints: bool = False,
        max_index: int = 30,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k (digits per token) must be an int >= 1, got {k!r}")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        reverse = _REVERSE_ALIASES.get(reverse, reverse)
        if reverse not in REVERSES:
            raise ValueError(f"reverse must be one of {REVERSES}, got {reverse!r}")
        if not isinstance(pad_zeros, bool):
            raise ValueError(f"pad_zeros must be a bool, got {pad_zeros!r}")
        if not isinstance(index_hints, bool):
            raise ValueError(f"index_hints must be a bool, got {index_hints!r}")
        if isinstance(max_index, bool) or not isinstance(max_index, int) or max_index < 1:
            raise ValueError(f"max_index must be an int >= 1, got {max_index!r}")
        self.k = k
        self.split = split
        self.reverse = reverse
        self.pad_zeros = pad_zeros
        self.index_hints = index_hints
        self.max_index = max_index
        self.n_digit_tokens = num_digit_tokens(k)
        self.hint_base = NUM_SPECIAL + self.n_digit_tokens
        self.n_hint_tokens = MAX_PARTS * max_index if index_hints else 0
        # Without a random split, encode_number is a pure function of its arguments: cached.
        self._cached_encode = (
            None
            if split == "random"
            else functools.lru_cache(maxsize=ENCODE_CACHE_SIZE)(self._encode_number)
        )

    def __repr__(self) -> str:
        return (
            f"NumberTokenizer(k={self.k}, split={self.split!r}, reverse={self.reverse!r}, "
            f"pad_zeros={self.pad_zeros}, index_hints={self.index_hints}, "
            f"max_index={self.max_index})"
        )

    # ------------------------------------------------------------------ vocabulary

    @property
    def vocab_size(self) -> int:
        """Specials + digit strings of length 1..k (+ hint tokens when enabled)."""
        return self.hint_base + self.n_hint_tokens

    def token_id(self, digits: str) -> int:
        """The id of one digit string of length 1..k (leading zeros are distinct tokens)."""
        if not isinstance(digits, str) or not (1 <= len(digits) <= self.k):
            raise ValueError(f"a token is a string of 1..{self.k} digits, got {digits!r}")
        if not (digits.isascii() and digits.isdigit()):
            raise ValueError(f"a token may only contain the digits 0-9, got {digits!r}")
        # All strings of shorter length come first: 10 + 100 + ... = (10^n - 1) / 9 - 1.
        shorter = (10 ** len(digits) - 1) // 9 - 1
        return NUM_SPECIAL + shorter + int(digits)

    def is_digit_token(self, token: int) -> bool:
        return NUM_SPECIAL <= token < self.hint_base

    def is_hint_token(self, token: int) -> bool:
        return self.hint_base <= token < self.hint_base + self.n_hint_tokens

    def hint_id(self, part: int, index: int) -> int:
        """The hint token for digit position ``index`` of the ``part``-th written part."""
        if not self.index_hints:
            raise ValueError("this tokenizer has no index hints (index_hints=False)")
        if not (0 <= part < MAX_PARTS):
            raise ValueError(f"part index must be in [0, {MAX_PARTS}), got {part}")
        if not (0 <= index < self.max_index):
            raise ValueError(
                f"digit position {index} needs an index hint >= max_index={self.max_index}; "
                "raise max_index or shorten the numbers"
            )
        return self.hint_base + part * self.max_index + index

    def token_string(self, token: int) -> str:
        """Readable form of one id: specials as ``<BOS>``..., digits as themselves, hints as
        ``<h{part}:{index}>``."""
        token = operator.index(token)
        if token in SPECIAL_NAMES:
            return SPECIAL_NAMES[token]
        if self.is_digit_token(token):
            offset = token - NUM_SPECIAL
            for length in range(1, self.k + 1):
                if offset < 10**length:
                    return str(offset).zfill(length)
                offset -= 10**length
        if self.is_hint_token(token):
            part, index = divmod(token - self.hint_base, self.max_index)
            return f"<h{part}:{index}>"
        raise ValueError(f"id {token} is outside the vocabulary [0, {self.vocab_size})")

    def to_text(self, ids: Sequence[int]) -> str:
        """Space-separated token strings, for logs and debugging."""
        return " ".join(self.token_string(t) for t in ids)

    # ------------------------------------------------------------------ numbers

    def _reversed(self, align: str) -> bool:
        """Whether a part with this alignment is written back to front."""
        if align == RIGHT:
            return self.reverse in ("int", "each", "total")
        return self.reverse in ("dec", "each", "total")

    def _hint_positions(self, pieces: list[str], align: str, reversed_: bool) -> list[int]:
        """Per piece: the anchor-relative position of its least significant digit."""
        n = sum(len(p) for p in pieces)
        positions = []
        start = 0
        for piece in pieces:
            written = range(start, start + len(piece))
            original = [n - 1 - w if reversed_ else w for w in written]
            if align == RIGHT:
                # Distance from the units digit; the smallest one is the least significant.
                positions.append(min(n - 1 - o for o in original))
            else:
                # Distance from the decimal point; the largest one is the least significant.
                positions.append(max(original))
            start += len(piece)
        return positions

    def encode_number(
        self,
        text: str,
        type_name: str,
        rng: random.Random | None = None,
        pad_to: Sequence[int] | None = None,
    ) -> list[int]:
        """Token ids of one number string written as ``type_name`` (brief Sec. 3.1, 3.9).

        ``pad_to`` gives a target length per part (in the type's part order); integer-like
        parts get leading zeros, decimal parts trailing zeros; a shorter target is a no-op.
        ``rng`` is required (and only used) with ``split="random"``.
        """
        if self._cached_encode is None:
            return self._encode_number(text, type_name, pad_to, rng)
        return list(self._cached_encode(text, type_name, None if pad_to is None else tuple(pad_to)))

    def _encode_number(
        self,
        text: str,
        type_name: str,
        pad_to: Sequence[int] | None = None,
        rng: random.Random | None = None,
    ) -> list[int]:
        """:meth:`encode_number` itself (the public method adds the cache)."""
        fmt = check_type(type_name)
        parts = split_parts(text, type_name)
        if parts is None:
            raise ValueError(f"{text!r} is not a well-formed {type_name} number")
        if self.split == "random" and rng is None:
            raise ValueError("split='random' needs an rng (random.Random) to draw chunk sizes")
        if pad_to is not None:
            if len(pad_to) != len(parts):
                raise ValueError(
                    f"pad_to has {len(pad_to)} lengths but {type_name} has {len(parts)} parts"
                )
            parts = [
                p.zfill(n) if align == RIGHT else p.ljust(n, "0")
                for p, n, align in zip(parts, pad_to, fmt.aligns, strict=True)
            ]
        written_parts = []
        # Chunk in the type's part order (so an rng is consumed in a fixed, readable order),
        # then arrange the parts for "total" reversal.
        for digits, align in zip(parts, fmt.aligns, strict=True):
            reversed_ = self._reversed(align)
            written = digits[::-1] if reversed_ else digits
            mode = self.split if align == RIGHT else "left"
            pieces = _chunk(written, self.k, mode, rng)
            written_parts.append((pieces, align, reversed_))
        if self.reverse == "total":
            written_parts.reverse()
        ids: list[int] = []
        for part_pos, (pieces, align, reversed_) in enumerate(written_parts):
            if part_pos:
                ids.append(PART_SEP)
            if self.index_hints:
                hints = self._hint_positions(pieces, align, reversed_)
                for piece, index in zip(pieces, hints, strict=True):
                    ids += [self.hint_id(part_pos, index), self.token_id(piece)]
            else:
                ids += [self.token_id(piece) for piece in pieces]
        return ids

    def decode_number(self, ids: Sequence[int], type_name: str) -> str:
        """Inverse of ``encode_number``: the number string, or "" if ``ids`` cannot be one.

        Reads up to the first EOS or PAD, ignores hint tokens, undoes the reversal, and joins
        the parts with the type's separators. Digits are returned as written (no stripping of
        leading or trailing zeros, no fraction reduction) so that string metrics judge what
        the model produced; a zero denominator is not a number and gives "". Never raises on
        model output (wrong separators, specials, out-of-vocabulary ids, empty input).
        """
        fmt = check_type(type_name)
        written: list[list[str]] = [[]]
        try:
            for raw in ids:
                token = operator.index(raw)
                if token in (EOS, PAD):
                    break
                if token == PART_SEP:
                    written.append([])
                elif self.is_hint_token(token):
                    continue
                elif self.is_digit_token(token):
                    written[-1].append(self.token_string(token))
                else:
                    return ""
        except (TypeError, ValueError, RuntimeError):
            return ""  # non-integer entries (floats, multi-element tensors, ...)
        if len(written) != len(fmt.aligns) or not all(written):
            return ""
        if self.reverse == "total":
            written.reverse()
        parts = []
        for pieces, align in zip(written, fmt.aligns, strict=True):
            digits = "".join(pieces)
            parts.append(digits[::-1] if self._reversed(align) else digits)
        if fmt.separators == ("/",) and int(parts[1]) == 0:
            return ""
        text = parts[0]
        for sep, digits in zip(fmt.separators, parts[1:], strict=True):
            text += sep + digits
        return text

    # ------------------------------------------------------------------ samples

    def _pad_targets(self, inputs: list[tuple[str, str]]) -> list[list[int]]:
        """Per input, per part: the longest same-index part among all inputs (official rule:
        parts are matched by index, whatever the types)."""
        all_parts = []
        for text, type_name in inputs:
            parts = split_parts(text, type_name)
            if parts is None:
                raise ValueError(f"{text!r} is not a well-formed {type_name} number")
            all_parts.append(parts)
        longest = [
            max(len(parts[j]) for parts in all_parts if j < len(parts))
            for j in range(max(len(parts) for parts in all_parts))
        ]
        return [longest[: len(parts)] for parts in all_parts]

    def encode_sample(
        self,
        a: str,
        b: str | None,
        answer: str | None,
        type_a: str,
        type_b: str | None,
        type_out: str,
        rng: random.Random | None = None,
    ) -> tuple[list[int], int]:
        """``BOS a [OPERATOR b] EQUALS answer EOS`` and the index of the first answer token.

        One-input tasks (``b`` None, ``type_b`` None or "none") omit ``OPERATOR b``. With
        ``answer=None`` the ids stop after EQUALS: the generation prompt, whose length is the
        returned index. Zero padding (if enabled) touches the inputs only (brief Sec. 3.9).
        """
        no_b = type_b is None or type_b == NO_INPUT
        if (b is None) != no_b:
            raise ValueError(
                f"b={b!r} and type_b={type_b!r} disagree: give both or neither "
                "(type_b None/'none' for one-input tasks)"
            )
        check_type(type_out)
        inputs = [(a, type_a)] if b is None else [(a, type_a), (b, type_b)]
        pads = self._pad_targets(inputs) if self.pad_zeros else [None] * len(inputs)
        ids = [BOS]
        for i, ((text, type_name), pad) in enumerate(zip(inputs, pads, strict=True)):
            if i:
                ids.append(OPERATOR)
            ids += self.encode_number(text, type_name, rng=rng, pad_to=pad)
        ids.append(EQUALS)
        answer_start = len(ids)
        if answer is not None:
            ids += self.encode_number(answer, type_out, rng=rng)
            ids.append(EOS)
        return ids, answer_start

    def decode_answer(self, ids: Sequence[int], type_out: str) -> str:
        """Decode the answer of a full sequence (everything after the first EQUALS); "" if
        there is no EQUALS or no valid number after it."""
        try:
            tokens = [operator.index(t) for t in ids]
        except (TypeError, ValueError, RuntimeError):
            return ""
        if EQUALS not in tokens:
            return ""
        return self.decode_number(tokens[tokens.index(EQUALS) + 1 :], type_out)

    @staticmethod
    def labels_for(ids: Sequence[int], answer_start: int) -> list[int]:
        """Training targets: IGNORE_INDEX (-100) on the prompt, the ids themselves on the
        answer tokens and the final EOS (brief Sec. 3.9: loss only after "=")."""
        if not (0 <= answer_start <= len(ids)):
            raise ValueError(f"answer_start {answer_start} is outside [0, {len(ids)}]")
        return [IGNORE_INDEX] * answer_start + [int(t) for t in ids[answer_start:]]

    @classmethod
    def pad_batch(
        cls,
        encoded: Sequence[tuple[Sequence[int], int]],
        *,
        side: str = "right",
        labels: bool | None = None,
        return_tensors: str | None = None,
    ) -> dict[str, Any]:
        """Pad ``(ids, answer_start)`` pairs to a rectangle with PAD.

        Returns ``input_ids`` and ``attention_mask`` (1 on real tokens), plus ``labels`` (the
        ``labels_for`` targets, IGNORE_INDEX on padding) when ``labels`` is true, which is the
        default for ``side="right"`` (training) and not for ``side="left"`` (generation
        prompts, so that every prompt ends in the last column). Lists of lists, or torch
        ``long`` tensors with ``return_tensors="pt"``.
        """
        if side not in ("right", "left"):
            raise ValueError(f"side must be 'right' or 'left', got {side!r}")
        if return_tensors not in (None, "pt"):
            raise ValueError(f"return_tensors must be None or 'pt', got {return_tensors!r}")
        if not encoded:
            raise ValueError("cannot pad an empty batch")
        with_labels = (side == "right") if labels is None else labels
        width = max(len(ids) for ids, _ in encoded)
        batch: dict[str, list[list[int]]] = {"input_ids": [], "attention_mask": []}
        if with_labels:
            batch["labels"] = []
        for ids, answer_start in encoded:
            n_pad = width - len(ids)
            rows = {
                "input_ids": ([int(t) for t in ids], PAD),
                "attention_mask": ([1] * len(ids), 0),
            }
            if with_labels:
                rows["labels"] = (cls.labels_for(ids, answer_start), IGNORE_INDEX)
            for key, (row, fill) in rows.items():
                padding = [fill] * n_pad
                batch[key].append(row + padding if side == "right" else padding + row)
        if return_tensors == "pt":
            import torch  # only the batch helpers need torch

            return {key: torch.tensor(rows, dtype=torch.long) for key, rows in batch.items()}
        return batch

    def batch_encode(
        self,
        samples: Sequence[tuple[str, str | None, str | None]],
        type_a: str,
        type_b: str | None,
        type_out: str,
        *,
        rng: random.Random | None = None,
        generation: bool = False,
        return_tensors: str | None = None,
    ) -> dict[str, Any]:
        """Encode and pad ``(a, b, answer)`` samples of one task.

        Training (default): full samples, right padding, ``labels`` with IGNORE_INDEX on the
        prompt and the padding. ``generation=True``: prompts only (answers are ignored), left
        padding, no labels; the first generated token goes right after the last column.
        """
        if generation:
            encoded = [
                self.encode_sample(a, b, None, type_a, type_b, type_out, rng=rng)
                for a, b, _ in samples
            ]
            return self.pad_batch(encoded, side="left", return_tensors=return_tensors)
        encoded = []
        for a, b, answer in samples:
            if answer is None:
                raise ValueError("training batches need an answer for every sample")
            encoded.append(self.encode_sample(a, b, answer, type_a, type_b, type_out, rng=rng))
        return self.pad_batch(encoded, side="right", return_tensors=return_tensors)

    def max_answer_tokens(self, max_digits: int, type_out: str) -> int:
        """``max_answer_tokens`` for this tokenizer's k, split and hints and ``type_out``."""
        return max_answer_tokens(
            max_digits,
            self.k,
            len(check_type(type_out).aligns),
            index_hints=self.index_hints,
            random_split=self.split == "random",
        )


__all__ = [
    "BOS",
    "EOS",
    "EQUALS",
    "IGNORE_INDEX",
    "MAX_PARTS",
    "NUM_SPECIAL",
    "NumberTokenizer",
    "OPERATOR",
    "PAD",
    "PART_SEP",
    "REVERSES",
    "SPECIAL_NAMES",
    "SPLITS",
    "max_answer_tokens",
    "num_digit_tokens",
]
