"""Recall and false-positive rate of the scrub gate on the labelled corpus (tests/data/scrub_corpus.json).

All secret values in the corpus are fake, generated for it with a seeded RNG.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acx.core.scrub import RULE_IDS, scan_record, scan_text

CORPUS = Path(__file__).resolve().parents[3] / "data" / "scrub_corpus.json"


@pytest.fixture(scope="module")
def corpus() -> list[dict]:
    return json.loads(CORPUS.read_text(encoding="utf-8"))["items"]


# The rule ids this corpus was written with, and the provider rule ids that now name them.
RENAMED = {
    "github-token": {"github-pat", "github-oauth", "github-app-token", "github-refresh-token"},
    "gitlab-token": {"gitlab-pat"},
    "slack-token": {
        "slack-token",
        "slack-bot-token",
        "slack-user-token",
        "slack-legacy-workspace-token",
        "slack-legacy-bot-token",
    },
    "slack-webhook": {"slack-webhook-url"},
    "google-api-key": {"gcp-api-key"},
    "stripe-secret-key": {"stripe-access-token"},
    "npm-token": {"npm-access-token"},
    "pypi-token": {"pypi-upload-token"},
    "sendgrid-api-key": {"sendgrid-api-token"},
    "huggingface-token": {"huggingface-access-token"},
    "databricks-token": {"databricks-api-token"},
    "vault-token": {"hashicorp-vault-token"},
    "heroku-api-key": {"heroku-api-key-v2"},
    "azure-client-secret": {"azure-ad-client-secret"},
    "pgp-private-key": {"private-key"},
}


def _names(rule: str) -> set[str]:
    return RENAMED.get(rule, {rule})


def _blocks(text: str) -> set[str]:
    return {f.rule for f in scan_text(text) if f.severity == "block"}


def test_corpus_size(corpus: list[dict]) -> None:
    assert sum(1 for it in corpus if it["label"] == "secret") >= 150
    assert sum(1 for it in corpus if it["label"] == "clean") >= 150


def test_recall_and_false_positive_rate(corpus: list[dict]) -> None:
    positives = [it for it in corpus if it["label"] == "secret"]
    negatives = [it for it in corpus if it["label"] == "clean"]
    missed = [it for it in positives if not _blocks(it["text"])]
    false_alarms = [it for it in negatives if _blocks(it["text"])]
    recall = 1 - len(missed) / len(positives)
    fp_rate = len(false_alarms) / len(negatives)
    print(
        f"\nscrub corpus: recall={recall:.4f} ({len(positives) - len(missed)}/{len(positives)}) "
        f"fp_rate={fp_rate:.4f} ({len(false_alarms)}/{len(negatives)})"
    )
    assert recall >= 0.98, [it["rule"] for it in missed]
    assert fp_rate <= 0.02, [it["text"][:60] for it in false_alarms]


def test_every_rule_has_positives_and_names_them(corpus: list[dict]) -> None:
    expected = {name for it in corpus if it["label"] == "secret" for name in _names(it["rule"])}
    assert expected <= set(RULE_IDS), expected - set(RULE_IDS)
    wrong = [
        (it["rule"], sorted(_blocks(it["text"])))
        for it in corpus
        if it["label"] == "secret" and not _names(it["rule"]) & _blocks(it["text"])
    ]
    assert len(wrong) <= 0.02 * len(corpus), wrong


def test_corpus_inside_records_blocks_at_the_right_path(corpus: list[dict]) -> None:
    for index, it in enumerate(corpus):
        record = {"id": f"r{index}", "title": "note", "summary": it["text"], "tags": ["a", "b"]}
        found = [f for f in scan_record(record) if f.severity == "block"]
        if it["label"] == "secret":
            assert found and {f.path for f in found} == {"$.summary"}, it["rule"]
            assert all(f.location == f"record:r{index}" for f in found)
        else:
            assert not found, it["text"]


def test_reports_never_echo_corpus_secrets(corpus: list[dict]) -> None:
    for it in corpus:
        if it["label"] != "secret":
            continue
        report = json.dumps([f.to_dict() for f in scan_text(it["text"], "text", "$.summary")])
        for token in it["text"].replace("=", " ").replace(":", " ").replace('"', " ").split():
            token = token.strip(".,'`();{}")
            if len(token) >= 8 and not any(token.lower() in rule for rule in RULE_IDS):
                assert token not in report, (it["rule"], token)
