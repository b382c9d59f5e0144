"""The trigger prefilter against each provider rule's own pattern: for every rule whose trigger is named
in ``triggers._EXPLICIT``, seeded secrets generated from the rule's regex are named by that rule,
standing at the start of a text, after a blank, inside quotes and in the generated context, exactly
where the rule's regex (run over the whole text, no prefilter) puts the secret. A trigger made case
sensitive, turned from a regex into a literal, or a window moved off the place where the rule's match
begins loses some of these. And every literal trigger, in any letter case, is a candidate that draws on
the scan budget.

Then how each rule's triggers are derived from the table, how far a trigger's window reaches, and
what runs once a flood of bare triggers has spent the budget (only the first hit's rules, anchored).
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

import pytest

from acx.core.scrub import scan_text, triggers
from acx.core.scrub.engine import _check_value, compiled
from acx.core.scrub.rules import RULES, Rule
from acx.core.scrub.triggers import _EXPLICIT, Trigger, _literal_prefix, all_triggers, triggers_for
from tests.unit.core.scrub.conftest import named

_PRINTABLE = [c for c in string.printable if c not in "\x0b\x0c"]
_WORD = string.ascii_letters + string.digits + "_"
_CATEGORIES = {sre_c.CATEGORY_DIGIT: string.digits, sre_c.CATEGORY_WORD: _WORD, sre_c.CATEGORY_SPACE: " \t\n"}
_NOT = {
    sre_c.CATEGORY_NOT_DIGIT: string.digits,
    sre_c.CATEGORY_NOT_WORD: _WORD,
    sre_c.CATEGORY_NOT_SPACE: " \t\n",
}


def _class(items: list) -> list[str]:
    negate, chars = False, set()
    for op, av in items:
        if op is sre_c.NEGATE:
            negate = True
        elif op is sre_c.LITERAL:
            chars.add(chr(av))
        elif op is sre_c.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        elif av in _CATEGORIES:
            chars.update(_CATEGORIES[av])
        else:
            chars.update(c for c in _PRINTABLE if c not in _NOT[av])
    return sorted({c for c in _PRINTABLE if c not in chars} if negate else chars)


def generate(pattern: str, rng: random.Random, longest: bool = False) -> str:
    """A string the pattern matches: random class members, random repeat counts (the most allowed when
    ``longest``, at most 40 more than the minimum; 12 more when drawn), letters of a case-insensitive
    part in random case (providers' variable names come in any case)."""
    tree = sre_parse.parse(pattern)
    out: list[str] = []

    def put(ch: str, ci: bool) -> None:
        out.append(ch.swapcase() if ci and rng.random() < 0.5 else ch)

    def walk(seq: list, ci: bool) -> None:
        for op, av in seq:
            if op is sre_c.LITERAL:
                put(chr(av), ci)
            elif op is sre_c.NOT_LITERAL:
                out.append(rng.choice([c for c in string.ascii_letters + " " if c != chr(av)]))
            elif op is sre_c.ANY:
                out.append(rng.choice(string.ascii_letters + string.digits))
            elif op is sre_c.IN:
                put(rng.choice(_class(av)), ci)
            elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
                low, high, sub = av
                top = min(high, low + 40)
                for _ in range(top if longest else rng.randint(low, min(top, low + 12))):
                    walk(sub, ci)
            elif op is sre_c.SUBPATTERN:
                walk(av[3], (ci or bool(av[1] & re.I)) and not av[2] & re.I)
            elif op is sre_c.BRANCH:
                walk(rng.choice(av[1]), ci)
            elif op is sre_c.CATEGORY:
                out.append(rng.choice(_CATEGORIES[av]))
            elif op is sre_c.AT:
                if av is sre_c.AT_BOUNDARY:
                    out.append(" ")  # ``curl\b``: a blank ends the word
            else:
                raise ValueError(f"no generator for {op}")

    walk(tree, bool(tree.state.flags & re.I))
    return "".join(out)


# Rule formats wider than the triggers that announce them, by design: the generated secret must carry
# one of its rule's triggers. Honeycomb keys are hcaik_/hcxik_/hcbik_ (the pattern allows any letter);
# an Azure DevOps name starting ``ado`` has no trigger (``ado`` is inside too many words: shadow,
# avocado); a Discord bot token is announced by ``discord`` or ``bot`` after it, at most 120 bytes on.
_CARRIES = {
    "honeycomb-api-key": re.compile(r"hc[abx]ik_"),
    "azure-devops-pat": re.compile(r"(?i)azure|devops|vsts"),
}
_AFTER = {"discord-bot-token": " # discord"}
_PLACES = ("{}", "x {}", "x {} y", 'k = "{}"\n', "k:\n  {}\n")
EXPLICIT_RULES = [i for i, r in enumerate(RULES) if not r.keyword and r.id in _EXPLICIT]


def _expected(index: int, text: str) -> int | None:
    """Where the rule's own regex, run over the whole text, finds a secret its value check accepts."""
    buf = text.encode()
    m = compiled().rule(index).search(buf)
    if m is None or not _check_value(index, m, buf):
        return None
    return int(m.start(m.re.groups))


def cases(index: int, seeds: int = 16) -> list[tuple[str, int]]:
    rule = RULES[index]
    out: list[tuple[str, int]] = []
    carries = _CARRIES.get(rule.id)
    for seed in range(seeds * (4 if carries is not None else 1)):
        rng = random.Random(f"{rule.id}:{index}:{seed}")
        generated = generate(rule.pattern, rng, longest=seed % 4 == 0)
        if carries is not None and not carries.search(generated):
            continue
        m = compiled().rule(index).search(generated.encode())
        if m is None:
            continue
        secret = generated[m.start(m.re.groups) : m.end(m.re.groups)]
        texts = [generated, *(p.format(secret) for p in _PLACES)]
        for text in texts:
            text += _AFTER.get(rule.id, "")
            offset = _expected(index, text)
            if offset is not None:
                out.append((text, offset))
    return out


@pytest.mark.parametrize("index", EXPLICIT_RULES, ids=lambda i: f"{RULES[i].id}#{i}")
def test_the_prefilter_finds_every_secret_the_rule_itself_finds(index: int) -> None:
    rule = RULES[index]
    found = cases(index)
    assert len(found) >= 8, (rule.id, len(found))
    missed = [
        (t[:80], off) for t, off in found if (rule.id, off) not in [(f.rule, f.offset) for f in scan_text(t)]
    ]
    assert not missed, (rule.id, missed[:3])


# Read from the trigger texts, never from the table's flags or windows (the table is what a mutant
# changes): a regex trigger is written with regex syntax, except ``Q~`` (case-sensitive on purpose).
_REGEX_SYNTAX = set("[](){}*+?|^$\\")


def _is_regex(text: str) -> bool:
    return text == "Q~" or any(c in _REGEX_SYNTAX for c in text)


LITERALS = sorted({t for alts in _EXPLICIT.values() for t, _, _ in alts if not _is_regex(t)})


@pytest.mark.parametrize("trigger", LITERALS)
def test_every_literal_trigger_in_any_case_draws_on_the_budget(trigger: str) -> None:
    """A literal trigger is matched whatever the case of its letters (most provider rules behind
    them are case-insensitive, and a candidate is a candidate): 1,000 bare copies with every letter's
    case swapped are more hits than the budget of that buffer allows, so it is refused whole."""
    flood = (trigger.swapcase() + " ") * 1000
    assert ("scan-budget", 0) in [(f.rule, f.offset) for f in scan_text(flood)]


MAPBOX_PUBLIC = "pk.eyJ1IjoiZXhhbXBsZSIsImEiOiJjbGsyIn0.Zq8Lm3Xv9Rt2Wp7Ny4Kb9Q"


@pytest.mark.parametrize("template", ["see {} here", 'L.mapbox.accessToken = "{}";', "MAPBOX_TOKEN={}"])
def test_a_mapbox_public_token_is_named_by_its_rule_after_any_separator(template: str) -> None:
    """A Mapbox token (``pk.eyJ1Ijoi``...) is named by its rule wherever it stands, not only at the
    start of a text: its match begins at the separator before ``pk.``, two bytes before the trigger
    ``k.eyJ1Ijoi``, so the window before the trigger reaches two bytes (one would report the token as
    an anonymous high-entropy run three bytes into it)."""
    text = template.format(MAPBOX_PUBLIC)
    assert [(f.rule, f.offset) for f in scan_text(text)] == [("mapbox-api-token", text.index("pk."))]


def _secret_of(rule_id: str) -> tuple[str, int]:
    """A generated match of one of ``rule_id``'s provider rules (context included: ``sig=``, ``curl``)
    and the offset of its secret in it, named by its rule after ``x ``."""
    for index in EXPLICIT_RULES:
        if RULES[index].id == rule_id:
            for seed in range(40):
                generated = generate(RULES[index].pattern, random.Random(f"{rule_id}:{index}:{seed}"))
                m = compiled().rule(index).search(generated.encode())
                if m is not None:
                    piece, offset = generated[m.start() : m.end()], m.start(m.re.groups) - m.start()
                    if _expected(index, f"x {piece} y") == 2 + offset:
                        return piece, offset
    raise AssertionError(f"no secret generated for {rule_id}")


# Rules whose trigger sits inside or after the secret, so they search a window before it (docs in
# triggers.py); every other explicit trigger starts its rules' match or follows its separator.
WINDOWED = {
    "azure-ad-client-secret",
    "azure-storage-key",
    "hashicorp-tf-api-token",
    "hashicorp-tf-password",
    "sentry-dsn",
    "new-relic-license-key",
    "mailchimp-api-key",
    "discord-bot-token",
    "telegram-bot-api-token",
    "maxmind-license-key",
    "sidekiq-sensitive-url",
    "microsoft-teams-webhook",
    "discord-webhook",
    "slack-webhook-url",
    "authress-service-client-access-key",
    # its first rule's match runs from ``kind:`` across lines (a 6,000-byte window), so a bare
    # ``kind:`` before the secret starts a match too
    "kubernetes-secret-yaml",
}
ANCHORED = [
    (rule_id, text, _is_regex(text))
    for rule_id, alts in _EXPLICIT.items()
    for text, _, _ in alts
    if rule_id not in WINDOWED
]


@pytest.mark.parametrize(("rule_id", "trigger", "regex"), ANCHORED, ids=[f"{r}:{t}" for r, t, _ in ANCHORED])
def test_past_the_budget_a_secret_after_a_bare_trigger_is_not_searched_for(
    rule_id: str, trigger: str, regex: bool
) -> None:
    """A trigger whose rules' match begins at (or just before) the trigger runs them anchored there:
    the cost of a hit is one anchored match, not a search of the window after it. Past the budget only
    the first hit is judged: with a bare trigger first and 1,000 more after, a secret right after the
    first, on the next line, is not looked for (its own hit comes second); the buffer is refused whole
    either way. (On the same line ``curl curl -u user:pw`` is one match from the first ``curl``.)"""
    if regex:  # a few draws: ``(?:live|test)_[a-f0-9]{4}`` is two prefixes
        bares = {generate(trigger, random.Random(f"{trigger}:{k}")) for k in range(4)}
    else:  # literal triggers match in any case (a case no other trigger shares puts this one first)
        bares = {trigger, trigger.swapcase()}
    secret, offset = _secret_of(rule_id)
    assert (rule_id, 2 + offset) in named(f"x {secret} y")
    for bare in sorted(bares):
        flood = f"{bare} " * 1000
        assert named(f"{bare}\n{secret} {flood}") == [("scan-budget", 0)], bare


SENTRY_KEY = "3f2a9c1be4d7085a6c9e1f3b2d4a7c8e"


@pytest.mark.parametrize("host_end", ["sentry.io", "ingest"])
@pytest.mark.parametrize("gap", [119, 120])
def test_a_sentry_dsn_is_named_up_to_120_bytes_before_its_host_name(host_end: str, gap: int) -> None:
    """A Sentry DSN is announced by the end of its host (``sentry.io`` or ``ingest``), after the key:
    a DSN whose ``https://`` begins 120 bytes before that word (a long organisation host) is named."""
    head = f"https://{SENTRY_KEY}@"
    text = f"x {head}o{'4' * (gap - len(head) - 2)}.{host_end}/123 y"
    assert text.index(host_end) - text.index("https") == gap
    assert named(text) == [("sentry-dsn", 10)]


TEAMS_PATH = (
    "/webhookb2/3f2a9c1b-e4d7-085a-6c9e-1f3b2d4a7c8e@1f3b2d4a-7c8e-3f2a-9c1b-e4d7085a6c9e"
    f"/IncomingWebhook/{SENTRY_KEY}/9c1be4d7-085a-6c9e-1f3b-2d4a7c8e3f2a"
)


@pytest.mark.parametrize("gap", [64, 65])
def test_a_teams_webhook_is_named_up_to_65_bytes_before_its_host_name(gap: int) -> None:
    """A Microsoft Teams webhook URL is announced by ``.webhook.office.com``: one whose ``//`` begins
    65 bytes before it (the longest tenant subdomain a DNS label allows, 63 bytes) is named."""
    text = f"x https://{'a' * (gap - 2)}.webhook.office.com{TEAMS_PATH} y"
    assert text.index(".webhook") - text.index("//") == gap
    assert named(text) == [("microsoft-teams-webhook", text.index("/webhookb2/") + 11)]


def test_a_lower_case_q_tilde_is_not_an_azure_candidate() -> None:
    """An Azure AD client secret holds ``Q~`` in upper case: its trigger is case-sensitive, so 1,000
    ``q~`` in a text are no candidates (clean, it passes) while 1,000 ``Q~`` spend the budget."""
    assert named("q~ " * 1000) == []
    assert named("Q~ " * 1000) == [("scan-budget", 0)]


BEARER = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8Lm3Xv9R"


@pytest.mark.parametrize(
    ("first", "flood", "rule"),
    [
        (f"Authorization: Bearer {BEARER}", "authorization ", "bearer-token"),
        (f"curl -H 'Authorization: Bearer {BEARER}' https://api.example", "curl ", "curl-auth-header"),
    ],
)
def test_past_the_budget_every_rule_behind_a_shared_first_trigger_is_judged(
    first: str, flood: str, rule: str
) -> None:
    """``authorization`` announces both the Basic and the Bearer header rules, ``curl`` both curl
    rules: one trigger, one entry. With the budget spent by 1,000 bare copies after it, the buffer is
    refused and only the first hit is judged, but every rule behind that trigger runs there, so a
    Bearer header (the second rule of each pair) standing first is named."""
    text = first + "\n" + flood * 1000
    assert (rule, first.index(BEARER)) in named(text)
    assert ("scan-budget", 0) in named(text)


# --- how each rule's triggers are derived (_literal_prefix, triggers_for, all_triggers) -----------


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


def _synthetic_rule(pattern: str, keyword: bool = False, rule_id: str = "synthetic-rule") -> Rule:
    return Rule(rule_id, pattern, keyword=keyword)


def test_a_keyword_rule_is_announced_by_its_keywords_of_three_characters_or_more() -> None:
    rule = _synthetic_rule("(?i)(Acme|Widget_Co|ab|x.yz|abc|ACME)[ =]+([0-9a-z]{32})", keyword=True)
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
    assert triggers_for(_synthetic_rule(pattern)) == expected


@pytest.mark.parametrize("pattern", [HEAD + "ab[0-9]{20})", "[a-z]{20}", HEAD + "(?i:ab)[0-9]{20})", "abc?d"])
def test_a_rule_with_fewer_than_three_literal_characters_needs_an_explicit_trigger(pattern: str) -> None:
    with pytest.raises(ValueError, match="synthetic-rule needs an explicit trigger"):
        triggers_for(_synthetic_rule(pattern))


def test_an_explicit_rule_gets_exactly_its_listed_triggers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(triggers._EXPLICIT, "synthetic-rule", (("AcMe", False, 7), ("Ac[0-9]{4}", True, 2)))
    assert triggers_for(_synthetic_rule("[a-z]{20}")) == [
        Trigger("acme", True, False, 7),
        Trigger("Ac[0-9]{4}", False, True, 2),
    ]


def test_an_explicit_keyword_rule_keeps_its_own_keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(triggers._EXPLICIT, "synthetic-rule", (("other", False, 1),))
    assert triggers_for(_synthetic_rule("(?i)(acme)[ =]+([0-9a-z]{32})", keyword=True)) == [
        Trigger("acme", True)
    ]


@pytest.mark.parametrize(("text", "ok"), [("x", False), ("", False), ("xy", True)])
def test_a_trigger_shorter_than_two_characters_is_refused(
    monkeypatch: pytest.MonkeyPatch, text: str, ok: bool
) -> None:
    monkeypatch.setattr(
        triggers,
        "RULES",
        (_synthetic_rule("[a-z]{20}"), _synthetic_rule(HEAD + "acme_[0-9]{20})", rule_id="other")),
    )
    monkeypatch.setitem(triggers._EXPLICIT, "synthetic-rule", ((text, False, 1),))
    if ok:
        assert all_triggers() == [(Trigger(text, True, False, 1), (0,)), (Trigger("acme_", False), (1,))]
    else:
        with pytest.raises(ValueError, match=r"synthetic-rule: trigger .* too short"):
            all_triggers()


def test_rules_sharing_a_trigger_are_listed_behind_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = (
        _synthetic_rule(HEAD + "acme_[0-9]{20})", rule_id="a"),
        _synthetic_rule("x"),
        _synthetic_rule(HEAD + "acme_[a-z]{20})", rule_id="b"),
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


# --- a literal trigger matches in any case, and each match draws on the scan budget ---------------


def _refused(text: str) -> bool:
    return [f.rule for f in scan_text(text)] == ["scan-budget"]


@pytest.mark.parametrize("spelling", ["SK-OR-V1-", "Sk-Or-V1-", "sK-oR-v1-"])
def test_each_case_swapped_copy_costs_one_step_per_rule_behind_the_triggers_it_spells(spelling: str) -> None:
    assert not _refused((spelling + " ") * 85)
    assert _refused((spelling + " ") * 86)


@pytest.mark.parametrize("prefix", ["FO1_", "FM1", "FM2_", "Fo1_", "fM2_"])
def test_fly_io_prefixes_in_any_case_draw_on_the_scan_budget(prefix: str) -> None:
    """The Fly.io triggers are case-insensitive literals: 600 of them in upper or mixed case are 600
    candidates, more than the budget of a 3 KB buffer allows, and the buffer is refused (fail closed)."""
    assert named((prefix + " ") * 600) == [("scan-budget", 0)]
    assert named((prefix + " ") * 20) == []


@pytest.mark.parametrize("prefix", ["sbp_", "SBP_", "Sbp_"])
def test_supabase_prefixes_in_any_case_draw_on_the_scan_budget(prefix: str) -> None:
    """The Supabase triggers are case-insensitive literals: 600 ``sbp_`` prefixes in any case are 600
    candidates, more than a 3 KB buffer's budget allows, so the buffer is refused; 20 are not."""
    assert named((prefix + " ") * 600) == [("scan-budget", 0)]
    assert named((prefix + " ") * 20) == []


@pytest.mark.parametrize("host", ["sentry.io ", "SENTRY.IO ", "Sentry.io "])
def test_bare_sentry_hosts_draw_on_the_scan_budget(host: str) -> None:
    """``sentry.io`` is the Sentry DSN rule's trigger, a literal matched in any case: each bare host
    runs that rule as well as the ``sentry`` keyword rules. 200 of them (2,000 bytes, a budget of 519)
    are refused as ``scan-budget``; 150 pass."""
    assert named(host * 200) == [("scan-budget", 0)]
    assert named(host * 150) == []


def test_a_look_alike_host_does_not_draw_the_dsn_rule() -> None:
    """``sentry-io`` is no Sentry host: it fires the ``sentry`` keyword rules only, so 200 of them
    stay inside the budget that 200 ``sentry.io`` hosts exceed."""
    assert named("sentry-io " * 200) == []
    assert named("sentry.io " * 200) == [("scan-budget", 0)]


@pytest.mark.parametrize("add", ["<add", "<ADD", "<Add"])
def test_a_nuget_password_is_blocked_whatever_the_case_of_its_element(add: str) -> None:
    """The NuGet rule is case-insensitive (``<ADD KEY=...>`` is the same config entry to a reader), so
    its ``<add`` trigger must find the element in any case."""
    text = f'{add} key="ClearTextPassword" value="Zq8Lm3Xv9Rt2" />'
    assert named(text) == [("nuget-config-password", len(text) - len('Zq8Lm3Xv9Rt2" />'))]


# --- what a keyword or provider name costs --------------------------------------------------------


def test_a_short_keyword_is_no_candidate() -> None:
    """intra42's ``42`` is too short to be a trigger: a text full of it costs nothing (clean)."""
    assert [f.rule for f in scan_text("42 " * 3000)] == []


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
    begin at their own prefix (``api-``, ``sq?_``, ``hvs.``, ``pcsk_``...). Were the name a trigger of
    those token rules too, each mention would cost twice and a clean text naming the provider a couple
    of hundred times would be refused as ``scan-budget``."""
    assert [f.rule for f in scan_text(f"{name} " * count)] == []


# --- where a trigger's window reaches -------------------------------------------------------------


@pytest.mark.parametrize("host_end", ["sentry.io", "ingest"])
@pytest.mark.parametrize("gap", [121, 200, 293, 294])
def test_a_sentry_dsn_with_a_long_host_is_named(host_end: str, gap: int) -> None:
    """A DSN whose ``https://`` begins more than 120 bytes before the end of its host (a host longer
    than 79 bytes) is named: the trigger window reaches back over the longest DSN the rule matches, the
    key, ``@`` and a 253-byte host (the longest DNS name) before the end."""
    head = f"https://{SENTRY_KEY}@"
    text = f"x {head}o{'4' * (gap - len(head) - 2)}.{host_end}/123 y"
    assert text.index(host_end) - text.index("https") == gap
    assert [(f.rule, f.offset) for f in scan_text(text)] == [("sentry-dsn", 10)]


@pytest.mark.parametrize("scheme", ["https:", "http:", ""])
@pytest.mark.parametrize("label", [1, 40, 62, 63])
def test_a_teams_webhook_is_named_with_any_tenant_label(scheme: str, label: int) -> None:
    """A tenant subdomain is one DNS label, 63 bytes at most: with the longest one the URL's ``//``
    begins 65 bytes before ``.webhook.office.com``, and it is named, with a scheme or without."""
    text = f"x {scheme}//{'a' * label}.webhook.office.com{TEAMS_PATH} y"
    assert [(f.rule, f.offset) for f in scan_text(text)] == [
        ("microsoft-teams-webhook", text.index("/webhookb2/") + 11)
    ]


DISCORD_BOT = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"


@pytest.mark.parametrize(("gap", "found"), [(119, True), (120, True), (121, False)])
def test_a_discord_bot_token_is_named_up_to_120_bytes_before_the_word_discord(gap: int, found: bool) -> None:
    """A Discord bot token has no prefix of its own: the word ``discord`` after it names it, when the
    match (the separator before the token) starts at most 120 bytes before that word. Farther away its
    random last part is still blocked, by the generic entropy check."""
    text = "x " + DISCORD_BOT + " " * (gap - 1 - len(DISCORD_BOT)) + "discord"
    assert text.index("discord") - (text.index(DISCORD_BOT) - 1) == gap
    assert named(text) == ([("discord-bot-token", 2)] if found else [("high-entropy", 34)])


AIRTABLE_PAT = "patQz8Lm3Xv9Rt2Wp." + hashlib.sha256(b"airtable").hexdigest()


@pytest.mark.parametrize("template", ["{}", "token {} end", "value: {};"])
def test_an_airtable_personal_access_token_is_named_by_its_rule(template: str) -> None:
    """``pat`` + 14 letters or digits + ``.`` + 64 hex digits is an Airtable personal access token,
    found wherever it stands (its trigger is the small regex of that prefix)."""
    text = template.format(AIRTABLE_PAT)
    assert named(text) == [("airtable-personal-access-token", text.index("pat"))]


# --- past the budget only the first hit's rules run, anchored at that hit -------------------------


SLACK_REFRESH = "xoxe-1-" + "".join(hashlib.sha256(bytes([i])).hexdigest() for i in range(3))[:146]


SLACK_XOXE_USER = "xoxe-1234567890-2345678901-3456789012-Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2Lm"


@pytest.mark.parametrize(
    ("token", "rule"), [(SLACK_REFRESH, "slack-config-refresh-token"), (SLACK_XOXE_USER, "slack-user-token")]
)
def test_past_the_budget_both_rules_behind_the_first_xoxe_hit_are_judged(token: str, rule: str) -> None:
    """``xoxe-`` announces two Slack formats, user tokens and configuration refresh tokens. With the
    budget spent by 1,000 bare ``xoxe-`` prefixes the buffer is refused and only the first hit is
    judged; both rules behind that hit run, so a token of either format standing first is named."""
    flood = "xoxe- " * 1000
    assert named(f"{token} {flood}") == [("scan-budget", 0), (rule, 0)]


LOB_TEST_PUB = "test_pub_" + hashlib.sha256(b"lob").hexdigest()[:31]


def test_past_the_budget_a_lob_key_after_a_bare_test_pub_prefix_is_not_searched_for() -> None:
    """A Lob publishable key starts at its ``test_pub_`` hit: it is named standing alone, and with the
    budget spent by bare ``test_pub_`` prefixes one standing after a bare prefix is not searched for
    (only the first hit is judged, anchored at that hit): the buffer is refused, nothing else named."""
    flood = "test_pub_ " * 1000
    assert named(f"k {LOB_TEST_PUB}") == [("lob-pub-api-key", 2)]
    assert named(f"test_pub_ {LOB_TEST_PUB} {flood}") == [("scan-budget", 0)]


FLY_TOKEN = "fo1_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8Lm3Xv9Rt2"


def test_past_the_budget_only_the_first_trigger_hit_is_judged() -> None:
    """1,000 bare ``fm1`` prefixes spend the budget in the trigger pass: the buffer is refused whole,
    and only the first hit's rules run, anchored at that hit. A Fly.io token standing first is named
    too; the same token after a bare ``fm1`` prefix is not searched for (its own hit comes second)."""
    flood = "fm1 " * 1000
    assert len(FLY_TOKEN) == 47
    assert named(f"{FLY_TOKEN} {flood}") == [("flyio-access-token", 0), ("scan-budget", 0)]
    assert named(f"fm1 {FLY_TOKEN} {flood}") == [("scan-budget", 0)]
    assert named(f"fm1 {FLY_TOKEN} end") == [("flyio-access-token", 4)]


SLACK_XOXP_USER = "xoxp-1234567890-2345678901-3456789012-Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2Lm"


@pytest.mark.parametrize("bare", ["xoxp-", "xoxe-"])
def test_past_the_budget_a_slack_token_after_a_bare_prefix_is_not_searched_for(bare: str) -> None:
    """The same for Slack's user-token prefixes: with the budget spent by 1,000 bare prefixes, a user
    token standing first is named, one standing after a bare prefix is not (only the first hit is
    judged, anchored at that hit), and the buffer is refused either way."""
    flood = f"{bare} " * 1000
    assert named(f"{SLACK_XOXP_USER} {flood}") == [("scan-budget", 0), ("slack-user-token", 0)]
    assert named(f"{bare} {SLACK_XOXP_USER} {flood}") == [("scan-budget", 0)]
    assert named(f"{bare} {SLACK_XOXP_USER} end") == [("slack-token", 6), ("slack-user-token", 6)]
