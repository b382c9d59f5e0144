"""Tombstone keys and sketches as stored values: each is written once (at forget) and matched for
ever after, so a silent change to how one is derived unmatches every tombstone already written and
lets forgotten memories back in. The keys are rebuilt here from their documented construction
(HMAC-SHA-256 over ``label NUL data``); the sketch, an algorithm with no second implementation, is
pinned by known-answer digests.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac

import pytest

from acx.core import forgetting as f

KEY = b"k" * 32
KEYER = f.StaticKeyer(KEY)
TITLE, SUMMARY = "Retry the deploy step", "The flaky deploy passed after three retries with backoff"


def _hmac(label: str, data: str) -> str:
    return hmac.new(KEY, label.encode() + b"\x00" + data.encode(), hashlib.sha256).hexdigest()


def test_the_keys_are_hmac_sha256_of_label_and_normalised_text() -> None:
    assert f.knowledge_key(KEYER, " Retry\u200b the DEPLOY step ", SUMMARY) == _hmac(
        "knowledge/v1", "retry the deploy step\n" + SUMMARY.lower()
    )
    assert f.knowledge_key(KEYER, None, 7) == _hmac("knowledge/v1", "\n")
    assert f.file_key(KEYER, "# Notes\n\n  line\t two ") == _hmac("file/v1", "# notes line two")
    assert f.id_key(KEYER, "Mem-1") == _hmac("id/v1", "Mem-1")  # ids are not normalised


def test_normalise_folds_width_case_invisibles_and_whitespace() -> None:
    assert f.normalise("\ufeff  ＡＢ\u00adc\u200d  \n\t d\u2060  ") == "abc d"
    assert f.normalise("Straße") == "strasse"
    assert f.normalise("\u2460") == "1"  # NFKC after the case fold too (circled digit one)


def test_sketch_known_answers() -> None:
    sk = f.record_sketch(KEYER, TITLE, SUMMARY)
    assert sk is not None and len(sk) == 60
    assert hashlib.sha256(f.pack(sk)).hexdigest() == (
        "ce91a0379a3c68d938c6f944d06cfacd42b0f85bacce52261eb0f36e4bba34b3"
    )
    # four word pairs fill at most four bins; the other 56 stay empty in the stored sketch (only the
    # band keys borrow values for them: densification)
    short = f.sketch(KEYER, "one two three four five")
    assert short is not None and sum(x != f._MASK64 for x in short) == 4
    assert hashlib.sha256(f.pack(short)).hexdigest() == (
        "b5af33b5e7ddebae25bc586d8ada82fec41f7163936de25cb3c0952785653809"
    )
    assert len(set(f.densify(short))) == 60
    assert f.band_keys(sk)[:2] == ["00ebaabdd892273b41", "01f5d121f5b5f03828"]


def test_sketch_needs_four_distinct_word_pairs() -> None:
    assert f.sketch(KEYER, "") is None
    assert f.sketch(KEYER, "word") is None
    assert f.sketch(KEYER, "one two three four") is None  # three pairs
    assert f.sketch(KEYER, "a b a b a b a b") is None  # two distinct pairs, repeated
    assert f.sketch(KEYER, "one two three four five") is not None


def test_the_sketch_is_keyed() -> None:
    other = f.record_sketch(f.StaticKeyer(b"x" * 32), TITLE, SUMMARY)
    assert other is not None and f.similarity(other, f.record_sketch(KEYER, TITLE, SUMMARY) or ()) < 0.1


def test_band_keys_name_their_band_and_change_with_it() -> None:
    sk = f.record_sketch(KEYER, TITLE, SUMMARY)
    assert sk is not None
    keys = f.band_keys(sk)
    assert [k[:2] for k in keys] == [f"{b:02d}" for b in range(20)]
    assert all(len(k) == 18 for k in keys)
    filled = next(i for i, x in enumerate(sk) if x != f._MASK64)
    moved = list(sk)
    moved[filled] ^= 1  # a filled bin of band filled % BANDS (bands are strided: b, b+20, b+40)
    changed = [i for i, (a, b) in enumerate(zip(keys, f.band_keys(moved), strict=True)) if a != b]
    # that band moves, and so do the bands of the empty bins that borrow its value (densification)
    borrowers = set()
    for i in range(f.SKETCH_BINS):
        j = i
        while sk[j] == f._MASK64:
            j = (j + 1) % f.SKETCH_BINS
        if j == filled:
            borrowers.add(i % f.BANDS)
    assert changed == sorted(borrowers) and filled % f.BANDS in changed and len(changed) < f.BANDS


def test_similarity_is_the_share_of_equal_bins() -> None:
    a = tuple(range(60))
    assert f.similarity(a, a) == 1.0
    assert f.similarity(a, tuple(range(1, 61))) == 0.0
    assert f.similarity(a, a[:30] + tuple(range(100, 130))) == 0.5


def test_pack_and_unpack_are_eight_bytes_a_bin() -> None:
    sk = tuple(range(60))
    raw = f.pack(sk)
    assert len(raw) == 480 and raw[:16] == (0).to_bytes(8, "big") + (1).to_bytes(8, "big")
    assert f.unpack(raw) == sk
    for bad in (raw[:-8], raw + b"\x00" * 8, b""):
        with pytest.raises(ValueError, match="wrong length"):
            f.unpack(bad)


def test_near_hits_keep_the_closest_tombstone_and_refuse_at_the_threshold() -> None:
    sk = tuple(range(1, 61))  # a long text's sketch: every bin filled, so shares are exact
    (probe,) = f.probes(KEYER, [{"id": "m", "title": TITLE, "summary": SUMMARY}], f.NearPolicy())
    probe = dataclasses.replace(probe, sketch=sk, bands=tuple(f.band_keys(sk)))
    half = sk[:30] + tuple(x ^ 1 for x in sk[30:])  # shares bands 0-9: similarity exactly 0.5
    close = sk[:54] + tuple(x ^ 1 for x in sk[54:])  # 0.9
    band0 = f.band_keys(sk)[0]
    got = f.near_hits({band0: {"t-half": (half, 4), "t-close": (close, 9)}}, [probe], 0.5)
    assert [h.to_dict() for h in got] == [{"index": 0, "id": "m", "rule": "near", "forgetSeq": 9}]
    assert [h.seq for h in f.near_hits({band0: {"t": (half, 4)}}, [probe], 0.5)] == [4]
    assert f.near_hits({band0: {"t": (half, 4)}}, [probe], 0.51) == []
    assert f.near_hits({"99nothing": {"t": (sk, 1)}}, [probe], 0.5) == []


def test_probes_carry_keys_and_a_sketch_only_when_near_copies_are_refused() -> None:
    records = [{"id": "a", "title": TITLE, "summary": SUMMARY}, {"id": 7, "title": "x"}]
    on = f.probes(KEYER, records, f.NearPolicy())
    off = f.probes(KEYER, records, f.NearPolicy(mode="off"))
    assert [p.index for p in on] == [0, 1] and [p.record_id for p in on] == ["a", "7"]
    assert on[0].knowledge == f.knowledge_key(KEYER, TITLE, SUMMARY)
    assert on[1].id_key == f.id_key(KEYER, "7")
    assert on[0].sketch == f.record_sketch(KEYER, TITLE, SUMMARY) and on[1].sketch is None
    assert all(p.sketch is None for p in off)
    assert f.NearPolicy().enabled and not f.NearPolicy(mode="off").enabled
    assert f.NearPolicy().threshold == 0.5
