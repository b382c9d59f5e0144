"""Which cheap literal (or tiny regex) announces each rule, so one RE2 pass finds every place to look.

The prefilter is ONE RE2 alternation of all triggers (a DFA: linear in the text, ~500 MB/s). Only a
trigger hit costs Python work: the rules behind that trigger run on a bounded window around it.
Regex triggers keep their counted repetitions small ({4}): an unanchored ``[A-Za-z0-9]{17}`` makes
the DFA track every offset inside a random run, its cache thrashes on base64 and RE2 falls back to
its (linear, but ~100x slower) NFA. ``test_scrub_linear`` pins that.
Triggers are derived from each pattern's literal prefix; rules without one name theirs below.
"""

from __future__ import annotations

from dataclasses import dataclass

from acx.core.scrub.rules import RULES, Rule

_META = set("[](){}.*+?|^$\\")


@dataclass(frozen=True)
class Trigger:
    """A literal (matched case-insensitively when ``ci``) or a small regex, and how far before its
    hit a match of its rules may start."""

    text: str
    ci: bool
    regex: bool = False
    before: int = 2


# Rules whose pattern has no literal prefix: (trigger, is regex, bytes before the trigger).
# A provider's name is no trigger here: these rules' matches begin at their own prefix, never at the name
# (the keyword rules of the same id announce the name themselves); it only spent the budget twice.
_EXPLICIT: dict[str, tuple[tuple[str, bool, int], ...]] = {
    "aws-access-key-id": (
        (r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{4}", True, 2),
    ),
    "yandex-aws-access-token": ((r"YC[a-zA-Z0-9_-]{4}", True, 2),),
    "vercel-token": ((r"vc[pkiar]_", True, 2),),
    "twilio-api-key": ((r"SK[0-9a-fA-F]{4}", True, 2),),
    "azure-ad-client-secret": (("Q~", True, 5),),
    "azure-storage-key": (("accountkey", False, 1), ("sharedaccesskey", False, 1), ("storage", False, 12)),
    "azure-sas-token": (("sig=", False, 2),),
    "azure-devops-pat": (("azure", False, 1), ("devops", False, 1), ("vsts", False, 1)),
    "gcp-service-account": (('"private_key_id"', False, 1), ('"type"', False, 1)),
    "kubernetes-secret-yaml": (("kind:", False, 1), ("data:", False, 1)),
    "hashicorp-tf-api-token": ((".atlasv1.", False, 16),),
    "hashicorp-tf-password": (("password", False, 40),),
    "nuget-config-password": (("<add", False, 1),),
    # A DSN's ``https://`` begins at most 8 + 32 + 1 + 253 bytes (the key, ``@``, the longest host) before
    # the end of its host; a window of 120 missed (passed clean) a DSN with a host longer than 79 bytes.
    "sentry-dsn": (("sentry.io", False, 294), ("ingest", False, 294)),
    "new-relic-license-key": (("NRAL", False, 37),),
    "mailchimp-api-key": ((r"-us[0-9]", True, 34),),
    "discord-bot-token": (("discord", False, 120), ("bot", False, 120)),
    "telegram-bot-api-token": ((r"[0-9]:A", True, 18),),
    "facebook-access-token": ((r"[0-9]{15}(?:\||%7C)", True, 2),),
    "maxmind-license-key": (("_mmk", False, 40),),
    "freemius-secret-key": (("secret_key", False, 2),),
    "sidekiq-sensitive-url": (("contribsys.com", False, 40),),
    # ``//`` and one DNS label (63 bytes at most) before the host: the ``//`` rule names every URL the
    # ``https://`` rule does, at the same place.
    "microsoft-teams-webhook": ((".webhook.office.com", False, 65),),
    "discord-webhook": (("/api/webhooks/", False, 20),),
    "slack-webhook-url": (("hooks.slack.com", False, 9),),
    "private-key": (("-----BEGIN", False, 1),),
    "putty-private-key": (("PuTTY-User-Key-File-", False, 1),),
    "jwt": ((r"ey[a-zA-Z0-9]{4}", True, 2),),
    "curl-auth-user": (("curl", False, 2),),
    "curl-auth-header": (("curl", False, 2),),
    "basic-auth-header": (("authorization", False, 1),),
    "bearer-token": (("authorization", False, 1),),
    "connection-string-password": (("password", False, 2), ("pwd", False, 2)),
    "gitlab-session-cookie": (("_gitlab_session=", False, 1),),
    "mailgun-private-api-token": (("key-", False, 2),),
    # ``test_`` alone fires on every test_* file name of a listing: keep the hex after it in the trigger.
    "lob-api-key": ((r"(?:live|test)_[a-f0-9]{4}", True, 2),),
    "gocardless-api-token": ((r"live_[a-z0-9_=-]{4}", True, 2),),
    "lob-pub-api-key": (("live_pub_", False, 2), ("test_pub_", False, 2)),
    # The match starts at the separator before ``pk.``/``sk.``/``tk.``: two bytes before this trigger.
    "mapbox-api-token": (("k.eyJ1Ijoi", False, 2),),
    "mysql-cli-password": (("mysql", False, 2), ("mariadb", False, 2)),
    "terraform-variable-default": (("variable", False, 1),),
    "settlemint-token": (("sm_", False, 2),),
    "launchdarkly-access-token": (
        ("api-", False, 2),
        ("sdk-", False, 2),
        ("mob-", False, 2),
    ),
    "stripe-access-token": (("sk_", False, 2), ("rk_", False, 2)),
    "square-access-token": ((r"EAAA[\w-]{4}", True, 2), ("sq0atp-", False, 2)),
    "flyio-access-token": (("fo1_", False, 2), ("fm1", False, 2), ("fm2_", False, 2)),
    "harness-api-key": (("pat.", False, 2), ("sat.", False, 2)),
    "authress-service-client-access-key": ((".acc_", False, 48), (".acc-", False, 48)),
    "sonar-api-token": (("squ_", False, 2), ("sqp_", False, 2), ("sqa_", False, 2)),
    "sourcegraph-access-token": (("sgp_", False, 2), ("sgs_", False, 2)),
    "hashicorp-vault-token": (("hvs.", False, 2), ("hvb.", False, 2)),
    # the format's own shape (``hc`` + one letter + ``ik_``): ingest, configuration and other key kinds
    "honeycomb-api-key": ((r"hc[a-z]ik_", True, 2),),
    "slack-legacy-workspace-token": (("xoxa-", False, 2), ("xoxr-", False, 2)),
    "slack-legacy-token": (("xoxo-", False, 2), ("xoxs-", False, 2)),
    "slack-user-token": (("xoxp-", False, 2), ("xoxe-", False, 2)),
    "slack-config-token": (("xoxe.", False, 2),),
    "openai-api-key": (("sk-", False, 2),),
    "openrouter-api-key": (("sk-or-v1-", False, 2),),
    "anthropic-api-key": (("sk-ant-", False, 2),),
    "shopify-token": (("shpat_", False, 2), ("shpca_", False, 2), ("shppa_", False, 2), ("shpss_", False, 2)),
    "github-app-token": (("ghu_", False, 2), ("ghs_", False, 2)),
    "digitalocean-token": (("doo_v1_", False, 2), ("dop_v1_", False, 2), ("dor_v1_", False, 2)),
    "planetscale-token": (("pscale_", False, 2),),
    "hubspot-pat": (("pat-na", False, 2), ("pat-eu", False, 2)),
    "flutterwave-key": (("FLWPUBK_", False, 2), ("FLWSECK_", False, 2)),
    "shippo-api-token": (("shippo_", False, 2),),
    "duffel-api-token": (("duffel_", False, 2),),
    "easypost-api-token": (("EZAK", False, 2), ("EZTK", False, 2)),
    "doppler-api-token": (("dp.", False, 2),),
    "plaid-api-token": (("access-", False, 2),),
    # The token follows a separator (rules._L): with it in the trigger, a run of A (base64 of zero bytes)
    # is one candidate, not one per byte (a 600-byte run spent a 20 KB blob's whole budget).
    "twitter-bearer-token": ((r"(?:^|[^0-9A-Za-z_+])A{21}", True, 2),),
    "notion-api-token": (("ntn_", False, 2), ("secret_", False, 2)),
    "intra42-client-secret": (("s-s4t2", False, 2),),
    "bitwarden-access-token": ((r"0\.[0-9a-f]{8}-", True, 2),),
    "pypi-upload-token": (("pypi-AgE", False, 2),),
    "1password-secret-key": ((r"A3-[A-Z0-9]{6}-", True, 2),),
    "airtable-personal-access-token": ((r"pat[a-zA-Z0-9]{14}\.", True, 2),),
    "yandex-access-token": (("t1.", False, 2),),
    "gitlab-runner-token": (("glrt-", False, 2),),
    "pinecone-api-key": (("pcsk_", False, 2),),
    "supabase-token": (("sbp_", False, 2), ("sb_secret_", False, 2)),
    "langsmith-api-key": (("lsv2_", False, 2),),
}


def _literal_prefix(body: str) -> str:
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body) and not body[i + 1].isalnum():
            out.append(body[i + 1])
            i += 2
        elif ch in _META:
            break
        else:
            out.append(ch)
            i += 1
        if i < len(body) and body[i] in "?*{":
            out.pop()  # the last character is optional or repeated
            break
    return "".join(out)


def _alternatives(group: str) -> list[str]:
    """Top-level alternatives of ``a|b|c`` (no nested groups expected in keyword lists)."""
    return group.split("|")


def triggers_for(rule: Rule) -> list[Trigger]:
    """The rule's triggers: explicit, keyword literals, or the pattern's literal prefix."""
    pat = rule.pattern
    if rule.keyword:  # its own keywords, even when a sibling rule of the same id names other triggers
        keywords = pat[len("(?i)(") : pat.index(")", len("(?i)("))]
        found = [_literal_prefix(k).lower() for k in _alternatives(keywords)]
        return [Trigger(k, True) for k in dict.fromkeys(found) if len(k) >= 3]
    if _EXPLICIT.get(rule.id):
        return [
            Trigger(t.lower() if not regex else t, not regex, regex, before)
            for t, regex, before in _EXPLICIT[rule.id]
        ]
    ci = False
    head = "(?:^|[^0-9A-Za-z_+])("
    body = pat[len(head) :] if pat.startswith(head) else pat
    if body.startswith("(?i:"):
        ci, body = True, body[4:]
    lit = _literal_prefix(body)
    if len(lit) < 3:
        raise ValueError(f"rule {rule.id} needs an explicit trigger (literal prefix {lit!r})")
    return [Trigger(lit.lower() if ci else lit, ci)]


def all_triggers() -> list[tuple[Trigger, tuple[int, ...]]]:
    """Every distinct trigger with the indexes (into RULES) of the rules behind it."""
    index: dict[Trigger, list[int]] = {}
    for i, rule in enumerate(RULES):
        for trig in triggers_for(rule):
            if len(trig.text) < 2:
                raise ValueError(f"rule {rule.id}: trigger {trig.text!r} too short")
            index.setdefault(trig, []).append(i)
    return [(t, tuple(ix)) for t, ix in index.items()]
