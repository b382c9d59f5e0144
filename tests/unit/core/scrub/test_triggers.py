"""The trigger prefilter against each provider rule's own pattern: for every rule whose trigger is named
in ``triggers._EXPLICIT``, seeded secrets generated from the rule's regex are named by that rule,
standing at the start of a text, after a blank, inside quotes and in the generated context, exactly
where the rule's regex (run over the whole text, no prefilter) puts the secret. A trigger made case
sensitive, turned from a regex into a literal, or a window moved off the place where the rule's match
begins loses some of these. And every literal trigger, in any letter case, is a candidate that draws on
the scan budget.
"""

from __future__ import annotations

import random
import re
import string
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

import pytest

from acx.core.scrub import scan_text
from acx.core.scrub.engine import _check_value, compiled
from acx.core.scrub.rules import RULES
from acx.core.scrub.triggers import _EXPLICIT

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


def _named(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


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
    """A Mapbox token (``pk.eyJ1Ijoi``...) is named by its rule wherever it stands; it was only named at
    the very start of a text, and reported as an anonymous high-entropy run three bytes into it
    elsewhere: its match begins at the separator before ``pk.``, two bytes before the trigger
    ``k.eyJ1Ijoi``, and the window reached one."""
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
    assert (rule_id, 2 + offset) in _named(f"x {secret} y")
    for bare in sorted(bares):
        flood = f"{bare} " * 1000
        assert _named(f"{bare}\n{secret} {flood}") == [("scan-budget", 0)], bare


SENTRY_KEY = "3f2a9c1be4d7085a6c9e1f3b2d4a7c8e"


@pytest.mark.parametrize("host_end", ["sentry.io", "ingest"])
@pytest.mark.parametrize("gap", [119, 120])
def test_a_sentry_dsn_is_named_up_to_120_bytes_before_its_host_name(host_end: str, gap: int) -> None:
    """A Sentry DSN is announced by the end of its host (``sentry.io`` or ``ingest``), after the key:
    a DSN whose ``https://`` begins 120 bytes before that word (a long organisation host) is named."""
    head = f"https://{SENTRY_KEY}@"
    text = f"x {head}o{'4' * (gap - len(head) - 2)}.{host_end}/123 y"
    assert text.index(host_end) - text.index("https") == gap
    assert _named(text) == [("sentry-dsn", 10)]


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
    assert _named(text) == [("microsoft-teams-webhook", text.index("/webhookb2/") + 11)]


def test_a_lower_case_q_tilde_is_not_an_azure_candidate() -> None:
    """An Azure AD client secret holds ``Q~`` in upper case: its trigger is case-sensitive, so 1,000
    ``q~`` in a text are no candidates (clean, it passes) while 1,000 ``Q~`` spend the budget."""
    assert _named("q~ " * 1000) == []
    assert _named("Q~ " * 1000) == [("scan-budget", 0)]


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
    assert (rule, first.index(BEARER)) in _named(text)
    assert ("scan-budget", 0) in _named(text)
