"""How each rule's triggers are derived (``triggers._literal_prefix``, ``triggers_for``,
``all_triggers``), pinned by the rules the module docstring states, on synthetic rules:

- a pattern's literal prefix: the characters it starts with, an escaped punctuation character being
  itself, up to the first metacharacter; a character made optional or repeated (``?``, ``*``, ``{``)
  is not part of it (``+`` keeps it: it occurs at least once);
- a keyword rule is announced by its own keywords, lowered, matched in any case, 3 characters or
  more (shorter ones such as intra42's ``42`` are inside too many words to be candidates);
- a rule named in ``_EXPLICIT`` by exactly the triggers listed there; a literal one lowered and
  matched in any case, a regex one as written;
- any other rule by its literal prefix, after the ``(?:^|[^0-9A-Za-z_+])(`` head, in any case when the
  body starts ``(?i:``; fewer than 3 literal characters is an error naming the rule, and a trigger
  shorter than 2 characters is refused whatever its source.

Also the one trigger-table family a differential cannot show: a literal trigger is matched in any
case, so a text full of it in a case the rule itself never matches still draws on the scan budget.
"""

from __future__ import annotations

import pytest

from acx.core.scrub import scan_text, triggers
from acx.core.scrub.rules import RULES, Rule
from acx.core.scrub.triggers import Trigger, _literal_prefix, all_triggers, triggers_for

HEAD = "(?:^|[^0-9A-Za-z_+])("


@pytest.mark.parametrize(
    ("body", "prefix"),
    [
        ("abc", "abc"),
        ("abcd[0-9]{4}", "abcd"),
        ("ab\\.cd[0-9]", "ab.cd"),
        ("\\.ab", ".ab"),
        ("ab\\-c", "ab-c"),
        ("ab\\d{4}", "ab"),  # \d is a class, not a character
        ("abc\\", "abc"),
        ("\\", ""),
        ("abc?", "ab"),
        ("abc*", "ab"),
        ("abc{2}", "ab"),
        ("abc+d", "abc"),
        ("a\\.?b", "a"),
        ("a\\.*", "a"),
        ("a\\.{3}", "a"),
        ("ab\\.\\.cd", "ab..cd"),
        ("ab(c)", "ab"),
        ("ab[c]", "ab"),
        ("ab|cd", "ab"),
        ("ab.c", "ab"),
        ("ab^", "ab"),
        ("ab$", "ab"),
        ("?abc", ""),
        ("", ""),
        ("x", "x"),
        ("xy", "xy"),
    ],
)
def test_the_literal_prefix_of_a_pattern(body: str, prefix: str) -> None:
    assert _literal_prefix(body) == prefix


def _rule(pattern: str, keyword: bool = False, rule_id: str = "synthetic-rule") -> Rule:
    return Rule(rule_id, pattern, keyword=keyword)


def test_a_keyword_rule_is_announced_by_its_keywords_of_three_characters_or_more() -> None:
    rule = _rule("(?i)(Acme|Widget_Co|ab|x.yz|abc|ACME)[ =]+([0-9a-z]{32})", keyword=True)
    assert triggers_for(rule) == [Trigger("acme", True), Trigger("widget_co", True), Trigger("abc", True)]


def test_every_keyword_rule_of_the_table_has_its_keywords_as_triggers() -> None:
    for rule in RULES:
        if rule.keyword:
            found = triggers_for(rule)
            assert found, rule.id
            assert all(t.ci and not t.regex and len(t.text) >= 3 and t.text == t.text.lower() for t in found)
            assert all(t.text in rule.pattern.lower() for t in found), rule.id


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (HEAD + "acme_[0-9]{20})", [Trigger("acme_", False)]),
        (HEAD + "(?i:AcMe_)[0-9]{20})", [Trigger("acme_", True)]),
        ("(?i:AcMe_)[0-9]{20}", [Trigger("acme_", True)]),
        ("ACME-[0-9]{20}", [Trigger("ACME-", False)]),
        (HEAD + "abc[0-9]{20})", [Trigger("abc", False)]),
    ],
)
def test_a_rule_without_keywords_is_announced_by_its_literal_prefix(pattern: str, expected: list) -> None:
    assert triggers_for(_rule(pattern)) == expected


@pytest.mark.parametrize("pattern", [HEAD + "ab[0-9]{20})", "[a-z]{20}", HEAD + "(?i:ab)[0-9]{20})", "abc?d"])
def test_a_rule_with_fewer_than_three_literal_characters_needs_an_explicit_trigger(pattern: str) -> None:
    with pytest.raises(ValueError, match="synthetic-rule needs an explicit trigger"):
        triggers_for(_rule(pattern))


def test_an_explicit_rule_gets_exactly_its_listed_triggers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(triggers._EXPLICIT, "synthetic-rule", (("AcMe", False, 7), ("Ac[0-9]{4}", True, 2)))
    assert triggers_for(_rule("[a-z]{20}")) == [
        Trigger("acme", True, False, 7),
        Trigger("Ac[0-9]{4}", False, True, 2),
    ]


def test_an_explicit_keyword_rule_keeps_its_own_keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(triggers._EXPLICIT, "synthetic-rule", (("other", False, 1),))
    assert triggers_for(_rule("(?i)(acme)[ =]+([0-9a-z]{32})", keyword=True)) == [Trigger("acme", True)]


@pytest.mark.parametrize(("text", "ok"), [("x", False), ("", False), ("xy", True)])
def test_a_trigger_shorter_than_two_characters_is_refused(
    monkeypatch: pytest.MonkeyPatch, text: str, ok: bool
) -> None:
    monkeypatch.setattr(
        triggers, "RULES", (_rule("[a-z]{20}"), _rule(HEAD + "acme_[0-9]{20})", rule_id="other"))
    )
    monkeypatch.setitem(triggers._EXPLICIT, "synthetic-rule", ((text, False, 1),))
    if ok:
        assert all_triggers() == [(Trigger(text, True, False, 1), (0,)), (Trigger("acme_", False), (1,))]
    else:
        with pytest.raises(ValueError, match=r"synthetic-rule: trigger .* too short"):
            all_triggers()


def test_rules_sharing_a_trigger_are_listed_behind_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = (
        _rule(HEAD + "acme_[0-9]{20})", rule_id="a"),
        _rule("x"),
        _rule(HEAD + "acme_[a-z]{20})", rule_id="b"),
    )
    monkeypatch.setattr(triggers, "RULES", rules)
    monkeypatch.setitem(triggers._EXPLICIT, "synthetic-rule", (("acme_", False, 2), ("zed", False, 2)))
    assert all_triggers() == [
        (Trigger("acme_", False), (0, 2)),
        (Trigger("acme_", True), (1,)),
        (Trigger("zed", True), (1,)),
    ]


def test_a_trigger_defaults_to_a_literal_two_bytes_before_its_rules() -> None:
    assert Trigger("abc", True) == Trigger("abc", True, False, 2)
    with pytest.raises(AttributeError):
        Trigger("abc", True).text = "x"  # type: ignore[misc]


def test_a_short_keyword_is_no_candidate() -> None:
    """intra42's ``42`` is too short to be a trigger: a text full of it costs nothing (clean)."""
    assert [f.rule for f in scan_text("42 " * 3000)] == []


SENTRY_KEY = "3f2a9c1be4d7085a6c9e1f3b2d4a7c8e"


@pytest.mark.parametrize("host_end", ["sentry.io", "ingest"])
@pytest.mark.parametrize("gap", [121, 200, 293, 294])
def test_a_sentry_dsn_with_a_long_host_is_named(host_end: str, gap: int) -> None:
    """A DSN whose ``https://`` begins more than 120 bytes before the end of its host (a host longer
    than 79 bytes) passed clean: the trigger window reached 120 bytes back. It now reaches the longest
    DSN the rule matches: the key, ``@`` and a 253-byte host (the longest DNS name) before the end."""
    head = f"https://{SENTRY_KEY}@"
    text = f"x {head}o{'4' * (gap - len(head) - 2)}.{host_end}/123 y"
    assert text.index(host_end) - text.index("https") == gap
    assert [(f.rule, f.offset) for f in scan_text(text)] == [("sentry-dsn", 10)]


TEAMS_PATH = (
    "/webhookb2/3f2a9c1b-e4d7-085a-6c9e-1f3b2d4a7c8e@1f3b2d4a-7c8e-3f2a-9c1b-e4d7085a6c9e"
    f"/IncomingWebhook/{SENTRY_KEY}/9c1be4d7-085a-6c9e-1f3b-2d4a7c8e3f2a"
)


@pytest.mark.parametrize("scheme", ["https:", "http:", ""])
@pytest.mark.parametrize("label", [1, 40, 62, 63])
def test_a_teams_webhook_is_named_with_any_tenant_label(scheme: str, label: int) -> None:
    """A tenant subdomain is one DNS label, 63 bytes at most: with the longest one the URL's ``//``
    begins 65 bytes before ``.webhook.office.com``, and it is named, with a scheme or without."""
    text = f"x {scheme}//{'a' * label}.webhook.office.com{TEAMS_PATH} y"
    assert [(f.rule, f.offset) for f in scan_text(text)] == [
        ("microsoft-teams-webhook", text.index("/webhookb2/") + 11)
    ]


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("launchdarkly", 200),
        ("sonar", 200),
        ("vault", 200),
        ("pinecone", 200),
        ("yandex", 200),
        ("vercel", 200),
        ("intra", 200),
        ("honeycomb", 115),
        ("twitter", 80),
    ],
)
def test_a_provider_name_costs_only_its_keyword_rules(name: str, count: int) -> None:
    """A provider's name announces its keyword rules, which is all it can start: its token rules
    begin at their own prefix (``api-``, ``sq?_``, ``hvs.``, ``pcsk_``...). The name was also a
    trigger of those token rules, so each mention cost twice and a clean text naming the provider
    a couple of hundred times was refused as ``scan-budget``."""
    assert [f.rule for f in scan_text(f"{name} " * count)] == []
