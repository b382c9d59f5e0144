"""The pure search core: tokenisation, segments and their bytes, ranking, fusion, engine tagging."""

from __future__ import annotations

import io
import json
import math
import random

import pytest

from acx.core.embedding import LocalHash128, embed
from acx.core.search import search, to_docs
from acx.core.search.ranking import EngineMismatch, IndexView
from acx.core.search.segment import Doc, Segment, SegmentError, merge, quantise
from acx.core.search.text import STEMMER, tokenize

ENGINE = LocalHash128()


def _rec(rid: str, title: str, summary: str = "", **over: object) -> dict:
    return {"id": rid, "title": title, "summary": summary, "portable": True, "tags": [], **over}


def _view(*batches: list[dict], deleted: frozenset[str] = frozenset()) -> IndexView:
    segs = [Segment.build(ENGINE.id, ENGINE.dim, to_docs(b, ENGINE)) for b in batches]
    return IndexView(ENGINE.id, ENGINE.dim, segs, deleted)


def test_tokenize_folds_case_and_width_drops_stopwords_and_stems() -> None:
    assert STEMMER == "snowball-english"
    assert tokenize("The Retries of the ＤＥＰＬＯＹＳ were failing") == ["retri", "deploy", "fail"]
    assert tokenize("retry retries retried") == ["retri"] * 3
    assert tokenize("a " + "x" * 65 + " ok") == ["ok"]  # a 65-char run is not a word
    assert tokenize("snake_case split") == ["snake", "case", "split"]


def test_segment_bytes_round_trip_and_refuse_damage() -> None:
    seg = Segment.build(
        ENGINE.id, ENGINE.dim, to_docs([_rec("a", "alpha beta"), _rec("b", "beta gamma")], ENGINE)
    )
    data = seg.to_bytes()
    back = Segment.from_bytes(data)
    assert back.ids == ["a", "b"] and back.postings == seg.postings
    assert list(back.docs) == list(seg.docs) and list(back.vectors) == list(seg.vectors)
    for bad in (data[:-1], data + b"\x00", b"XXXXXXXX" + data[8:], data[:10]):
        with pytest.raises(SegmentError):
            Segment.from_bytes(bad)


def test_int8_vectors_keep_the_cosine_ranking() -> None:
    rng = random.Random(7)
    words = "cache retry deploy queue shard lock timeout parser socket worker".split()
    texts = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(200)]
    query = embed("retry the queue worker")
    exact = [sum(q * d for q, d in zip(query, embed(t), strict=True)) for t in texts]
    approx = []
    for t in texts:
        codes, scale = quantise(embed(t))
        approx.append(sum(q * c for q, c in zip(query, codes, strict=True)) * scale)
    assert max(abs(a - e) for a, e in zip(approx, exact, strict=True)) < 0.02
    top_exact = sorted(range(200), key=lambda i: -exact[i])[:10]
    top_approx = sorted(range(200), key=lambda i: -approx[i])[:10]
    assert len(set(top_exact) & set(top_approx)) >= 9


def test_bm25_ranks_the_rarer_term_higher_and_later_segments_supersede() -> None:
    view = _view(
        [_rec("a", "queue worker"), _rec("b", "queue"), _rec("c", "queue"), _rec("d", "worker zebra")],
        [_rec("b", "unrelated now")],
    )
    hits = view.search(tokenize("queue zebra"), None, None, k=10)
    assert hits[0].id == "d"  # the rare term outweighs the common one
    assert "b" not in [h.id for h in hits]  # b's newer version no longer mentions queue
    assert view.n == 4


def test_deleted_ids_are_hidden_and_without_removes_their_terms() -> None:
    seg = Segment.build(ENGINE.id, ENGINE.dim, to_docs([_rec("a", "kestrel"), _rec("b", "falcon")], ENGINE))
    assert [
        h.id
        for h in IndexView(ENGINE.id, ENGINE.dim, [seg], frozenset({"a"})).search(
            ["kestrel"], None, None, k=5
        )
    ] == []
    kept = seg.without({"a"})
    assert kept.ids == ["b"] and "kestrel" not in kept.postings
    assert b"kestrel" not in kept.to_bytes()


def test_filters_by_zone_and_tag() -> None:
    view = _view(
        [
            _rec("rom1", "deploy notes", tags=["Ops"]),
            _rec("save1", "deploy notes", portable=False, tags=["ops"]),
            _rec("rom2", "deploy notes"),
        ]
    )
    assert {h.id for h in search(view, ENGINE, "deploy", k=10, zone="save")} == {"save1"}
    assert {h.id for h in search(view, ENGINE, "deploy", k=10, tag="OPS")} == {"rom1", "save1"}


def test_an_index_is_never_queried_with_another_engines_vectors() -> None:
    view = _view([_rec("a", "alpha")])

    class Other:
        id = "bedrock:amazon.titan-embed-text-v2:0:256"
        dim = 256
        lexical = False

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0 / 16] * 256 for _ in texts]

    with pytest.raises(EngineMismatch):
        search(view, Other(), "alpha", k=5)
    with pytest.raises(EngineMismatch):  # same dimension, other engine: still refused
        view.search(["alpha"], embed("alpha"), "some-other-128", k=5)
    other_seg = Segment.build(Other.id, 256, [Doc("x", "rom", (), ["alpha"], [1.0 / 16] * 256)])
    with pytest.raises(EngineMismatch):
        IndexView(ENGINE.id, ENGINE.dim, [*view.segments, other_seg])
    with pytest.raises(SegmentError):
        merge([*(p.segment() for p in view.segments), other_seg], ENGINE.id, ENGINE.dim, lambda s, i: True)


def test_a_weak_vector_signal_cannot_outrank_a_lexical_match() -> None:
    # "b" shares no word with the query, only hashed dimensions; "a" matches it lexically.
    docs = [_rec("a", "kestrel migration"), _rec("b", "completely different words here")]
    view = _view(docs)
    hits = search(view, ENGINE, "kestrel migration", k=2)
    assert hits[0].id == "a" and hits[0].lexical_rank == 1


def test_vector_signal_scans_every_doc_and_the_sparse_and_dense_paths_agree() -> None:
    rng = random.Random(3)
    words = "cache retry deploy queue shard lock timeout parser socket worker".split()
    view = _view([_rec(f"d{i}", " ".join(rng.choice(words) for _ in range(6))) for i in range(300)])
    q = embed("gamma delta")  # no shared word: only hashed dimensions can match
    sparse = view.vector(q, view.live)
    dense = view._vectors.astype("float32") @ __import__("numpy").asarray(q, dtype="float32") * view.scales
    assert all(abs(a - max(b, 0.0)) < 1e-5 for a, b in zip(sparse.tolist(), dense.tolist(), strict=True))
    q2 = embed("retry the queue")
    hits = view.search([], q2, ENGINE.id, k=5)
    assert hits and all(h.lexical_rank is None and h.vector_rank for h in hits)


def test_merge_keeps_postings_consistent() -> None:
    a = Segment.build(ENGINE.id, ENGINE.dim, to_docs([_rec("1", "one two"), _rec("2", "two three")], ENGINE))
    b = Segment.build(ENGINE.id, ENGINE.dim, to_docs([_rec("3", "three four")], ENGINE))
    m = merge([a, b], ENGINE.id, ENGINE.dim, lambda seg, i: seg.ids[i] != "2")
    assert m.ids == ["1", "3"]
    start, count = m.postings["three"]
    assert [m.ids[m.docs[j]] for j in range(start, start + count)] == ["3"]
    assert "2" not in m.ids and m.postings.keys() == {"one", "two", "three", "four"}
    assert len(m.vectors) == 2 * ENGINE.dim


def test_titan_engine_through_a_stubbed_bedrock_client() -> None:
    import boto3
    from botocore.response import StreamingBody
    from botocore.stub import Stubber

    from acx.adapters.bedrock import TitanEmbeddings

    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    engine = TitanEmbeddings(client, dim=256)
    assert engine.id == "bedrock:amazon.titan-embed-text-v2:0:256" and not engine.lexical
    vector = [0.0] * 256
    vector[3] = 2.0
    payload = json.dumps({"embedding": vector, "inputTextTokenCount": 3}).encode()
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model",
            {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"},
            {
                "modelId": "amazon.titan-embed-text-v2:0",
                "body": json.dumps({"inputText": "hello world", "dimensions": 256, "normalize": True}),
                "contentType": "application/json",
                "accept": "application/json",
            },
        )
        out = engine.embed(["hello world"])
        stub.assert_no_pending_responses()
    assert out[0][3] == 1.0 and math.isclose(sum(v * v for v in out[0]), 1.0)
    short = json.dumps({"embedding": [0.1] * 10}).encode()
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model", {"body": StreamingBody(io.BytesIO(short), len(short)), "contentType": "x"}
        )
        with pytest.raises(ValueError, match="10 dimensions"):
            engine.embed(["x"])
    with pytest.raises(ValueError):
        TitanEmbeddings(client, dim=300)


def test_a_titan_index_ranks_by_meaning_where_words_differ() -> None:
    """A semantic engine (here a fake that maps synonyms together) gets full weight in the fusion."""

    class Synonyms:
        id = "fake-semantic-4"
        dim = 4
        lexical = False
        groups = ({"car", "automobile"}, {"fast", "quick"}, {"red"}, {"blue"})

        def embed(self, texts: list[str]) -> list[list[float]]:
            out = []
            for text in texts:
                words = set(text.lower().split())
                v = [float(len(words & g)) for g in self.groups]
                n = math.sqrt(sum(x * x for x in v)) or 1.0
                out.append([x / n for x in v])
            return out

    engine = Synonyms()
    docs = to_docs([_rec("a", "automobile quick"), _rec("b", "blue red")], engine)
    view = IndexView(engine.id, engine.dim, [Segment.build(engine.id, engine.dim, docs)])
    hits = search(view, engine, "fast car", k=2)
    assert [h.id for h in hits] == ["a"] and hits[0].lexical_rank is None and hits[0].vector_rank == 1


def test_building_merging_and_forgetting_never_import_numpy() -> None:
    """The ingest and verify functions have no numpy (it ships in the api function's SearchLayer)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from acx.core.embedding import LocalHash128\n"
        "from acx.core.search import to_docs\n"
        "from acx.core.search.segment import Segment, live_masks, merge\n"
        "e = LocalHash128()\n"
        "a = Segment.build(e.id, e.dim, to_docs([{'id': 'x', 'title': 'kestrel', 'portable': True}], e))\n"
        "b = Segment.from_bytes(a.to_bytes()).without({'x'})\n"
        "m = merge([a, b], e.id, e.dim, lambda s, i: live_masks([a, b])[0][i])\n"
        "print(len(m), len(b))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "0"]


def test_the_ascii_fast_path_finds_the_words_the_regex_finds() -> None:
    from acx.core.search.text import _WORD_RE, split_words

    rng = random.Random(11)
    alphabet = "abcXYZ019 _-.,;:'\"\n\t()/\\@#$%^&*+=~`|<>?!{}[]"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert split_words(text) == _WORD_RE.findall(text.casefold()), text
    assert split_words("Ünïcode ＤＥＰＬＯＹ snake_case") == ["ünïcode", "deploy", "snake", "case"]


def test_dense_queries_score_every_doc_as_the_full_product_does() -> None:
    """A semantic engine's query has every dimension set: the blocked float path must give the same
    cosines as the plain product (here over more docs than one block)."""
    import numpy as np

    from acx.core.search import ranking

    rng = random.Random(9)
    dim = 16
    docs = [Doc(f"d{i}", "rom", (), ["x"], [rng.uniform(-1, 1) for _ in range(dim)]) for i in range(700)]
    view = IndexView("dense-16", dim, [Segment.build("dense-16", dim, docs)])
    q = [rng.uniform(-1, 1) for _ in range(dim)]
    old, ranking.DENSE_CHUNK = ranking.DENSE_CHUNK, 256
    try:
        got = view.vector(q, None)
    finally:
        ranking.DENSE_CHUNK = old
    want = np.maximum(view._vectors.astype(np.float32) @ np.asarray(q, np.float32) * view.scales, 0)
    assert np.allclose(got, want, atol=1e-5) and (got > 0).sum() > 100


def test_a_damaged_segment_is_refused_by_the_view_too() -> None:
    from acx.core.search.segment import Packed

    seg = Segment.build(ENGINE.id, ENGINE.dim, to_docs([_rec("a", "alpha beta"), _rec("b", "beta")], ENGINE))
    data = bytearray(seg.to_bytes())
    packed = Packed.parse(bytes(data))
    offset, _ = packed.sections["docs"]
    data[offset : offset + 4] = (99).to_bytes(4, "little")  # a posting naming doc 99 of 2
    with pytest.raises(SegmentError):
        IndexView(ENGINE.id, ENGINE.dim, [Packed.parse(bytes(data))])
    with pytest.raises(SegmentError):
        Segment.from_bytes(bytes(data))


def test_a_sparse_query_copies_only_its_dimensions_and_scores_as_the_full_product() -> None:
    import numpy as np

    rng = random.Random(5)
    words = "cache retry deploy queue shard lock timeout parser socket worker".split()
    view = _view([_rec(f"d{i}", " ".join(rng.choice(words) for _ in range(6))) for i in range(257)])
    first, second = embed("retry the queue"), embed("shard lock parser")
    wanted = set(np.flatnonzero(first).tolist())
    assert 0 < len(wanted) * 2 <= ENGINE.dim  # the sparse path
    reference = view._vectors.astype(np.float32)
    for q in (first, second, first):
        got = view.vector(q, None)
        want = np.maximum(reference @ np.asarray(q, dtype=np.float32) * view.scales, 0.0)
        assert np.allclose(got, want, atol=1e-5)
        if q is first:
            assert set(view._columns) >= wanted
    assert set(view._columns) == wanted | set(np.flatnonzero(second).tolist())  # nothing else copied
    assert all(c.flags.c_contiguous and c.shape == (257,) for c in view._columns.values())
