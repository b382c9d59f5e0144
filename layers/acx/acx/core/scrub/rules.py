"""The provider rule table: one line per token format, written from each provider's public format facts.

Why this file is long (~300 lines): it is a table, one entry per provider format (about 190), and a
table split over several modules is harder to review for gaps than one. Everything else in the gate
(engine, judgements, normalisation, walking records) lives in modules under 400 lines.

Every pattern is RE2 syntax (linear time, no backreferences, no lookaround) with exactly ONE capture
group: the secret. Three shapes:

- ``P(id, body)``: a self-identifying token (``ghp_``, ``glpat-``, ``SG.``...). ``body`` must start
  with a literal prefix; the helper adds "not preceded by a token character" and, when ``end`` is
  true, "not followed by one" (formats of a fixed length).
- ``K(id, keywords, value)``: a format with no prefix of its own (a 32-hex Datadog key, a 25-char
  Twitter key): the value counts only after a keyword, an optional name tail and an assignment
  operator (``=``, ``:``, ``:=``, ``=>``, ``?=``, ``.=``, ``,`` in ``setProperty("K", v)``, ``>`` in
  ``<k>v</k>``), case-insensitive as the providers' own docs write the variable names.
- ``R(id, pattern)``: anything else (private key blocks, webhook URLs, curl -u), with its own group.

``checks`` names an extra verification the engine runs on the captured value (``crc32-base62``: the
CRC32 checksum GitHub and npm embed in their tokens' last 6 characters).

What this table does NOT stop: a format not listed here and not caught by the generic rules
(assignment to a secret-like name, high-entropy runs, credentials in URLs) in engine.py.
"""

from __future__ import annotations

from dataclasses import dataclass

# A token character: what may not touch a self-identifying token on its left.
_L = r"(?:^|[^0-9A-Za-z_+])"  # "+": in base64 blobs no prefix starts a token ("." does: $.AKIA...)
_R = r"(?:[^0-9A-Za-z_]|$)"
_RD = r"(?:[^0-9A-Za-z_\-]|$)"  # for alphabets that include '-'
# Assignment between a keyword (plus up to 40 name characters) and a value.
_OP = (
    r"""[\w.\-]{0,40}?["'\]]{0,2}[ \t]{0,3}"""
    r"""(?:={1,3}>?|:{1,3}=?|\?=|\.=|\|\|=|!=|,[ \t]{0,4}["'`]|>|\(|[ \t]+is[ \t]|[ \t]+="""
    r"""|[ \t]+(?:string|String|str|\[\]byte|char\*?)[ \t]{0,3}:?=|[ \t]*\r?\n[ \t]*value:)"""
    r"""[ \t\r\n]{0,20}(?:\\?["'`]|\[)?[ \t]{0,3}"""
)


@dataclass(frozen=True)
class Rule:
    """One format: rule id, RE2 pattern with one capture group, and optional value checks."""

    id: str
    pattern: str
    checks: tuple[str, ...] = ()
    # Rules whose value is only a shape (hex, digits, uuid) next to a keyword: the value must not be
    # a placeholder and must not repeat one character too often (see judge.weak_value).
    keyword: bool = False


def P(rule_id: str, body: str, end: bool = True, checks: tuple[str, ...] = ()) -> Rule:
    return Rule(rule_id, _L + "(" + body + ")" + (_RD if end else ""), checks)


def K(rule_id: str, keywords: str, value: str) -> Rule:
    return Rule(rule_id, "(?i)(" + keywords + ")" + _OP + "(" + value + ")" + _RD, keyword=True)


def R(rule_id: str, pattern: str) -> Rule:
    return Rule(rule_id, pattern)


# A Secret's first data entry: comment lines may come first, and the value may be a block scalar.
_K8S_VALUE = (
    r"(?:[ \t]{0,9}#[^\n]{0,200}\n)*\s{1,9}[\w.\-]{1,64}:[ \t]{0,9}(?:[|>][-+]?[ \t]{0,9}\n[ \t]{1,12})?"
    r"['\"]?([A-Za-z0-9+/]{12,}={0,2})"
)
H32 = "[0-9a-f]{32}"
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
AN = "[0-9a-z]"  # inside K() everything is case-insensitive
B64 = "[A-Za-z0-9+/]"
URLSAFE = "[A-Za-z0-9_-]"

RULES: tuple[Rule, ...] = (
    # --- cloud
    P(
        "aws-access-key-id",
        "(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}",
    ),
    P("aws-bedrock-api-key", "ABSKQmVkcm9ja0FQSUtleS[A-Za-z0-9+/]{20,400}={0,2}", end=False),
    P(
        "aws-bedrock-api-key",
        # the prefix is base64 of "bedrock.amazonaws.com"; the key is the signed URL after it
        "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%&-]{32,1000}",
        end=False,
    ),
    K("aws-secret-access-key", r"aws|secret.?access|secretaccess", "[A-Za-z0-9/+]{40}"),
    K("aws-session-token", r"aws.?session.?token|security.?token", "[A-Za-z0-9/+=]{100,1000}"),
    P("gcp-api-key", "AIza[0-9A-Za-z_-]{35}"),
    R("gcp-service-account", r'("private_key_id"\s*:\s*"[0-9a-f]{40}")'),
    R("gcp-service-account", r'("type"\s*:\s*"service_account")'),
    P("gcp-oauth-client-secret", "GOCSPX-[0-9A-Za-z_-]{28}"),
    P("gcp-oauth-refresh-token", r"1//0[0-9A-Za-z_-]{40,}", end=False),
    P("google-oauth-access-token", r"ya29\.[0-9A-Za-z_-]{30,}", end=False),
    R(
        "azure-ad-client-secret",
        r"(?:^|[^0-9A-Za-z_~.\-])([A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})\.?(?:[^0-9A-Za-z_~.\-]|$)",
    ),
    R(
        "azure-storage-key",
        r"(?i)(?:AccountKey|SharedAccessKey|azure.?storage.?(?:account.?)?key)\s{0,3}[=:]\s{0,3}[\"']?([A-Za-z0-9+/]{86,88}={0,2})",
    ),
    R("azure-sas-token", r"(?:[?&]sig=)([A-Za-z0-9%+/]{40,}(?:%3D|=){0,2})"),
    R(
        "azure-devops-pat",
        r"(?i)(?:azure|devops|ado|vsts)[\w.\-]{0,20}(?:pat|token)[\w.\-]{0,20}[\"']?\s{0,3}[:=]{1,2}\s{0,3}[\"']?([a-z2-7]{52}|[A-Za-z0-9]{84})(?:[^0-9A-Za-z]|$)",
    ),
    P("alibaba-access-key-id", "LTAI[0-9A-Za-z]{20}"),
    # Tencent Cloud: a SecretId is AKID followed by 32 letters and digits (36 in all)
    P("tencent-cloud-secret-id", "AKID[0-9A-Za-z]{32}"),
    K("alibaba-secret-key", "alibaba|aliyun", AN + "{30}"),
    P("digitalocean-token", "do[opr]_v1_[a-f0-9]{64}"),
    P("yandex-aws-access-token", "YC[a-zA-Z0-9_-]{38}"),
    P("yandex-api-key", "AQVN[A-Za-z0-9_-]{35,38}"),
    P("yandex-access-token", r"t1\.[A-Z0-9a-z_-]+[=]{0,2}\.[A-Z0-9a-z_-]{86}[=]{0,2}"),
    K("ibm-cloud-api-key", "ibm|bluemix", "[A-Za-z0-9_-]{44}"),
    P("heroku-api-key-v2", "HRKU-[0-9a-zA-Z_-]{20,}", end=False),
    K("heroku-api-key", "heroku", UUID),
    P(
        "flyio-access-token",
        r"(?:fo1_[\w-]{43}|fm1[ar]_[a-zA-Z0-9+/]{100,}={0,3}|fm2_[a-zA-Z0-9+/]{100,}={0,3})",
        end=False,
    ),
    P("scalingo-api-token", "tk-us-[\\w-]{48}"),
    P("openshift-user-token", "sha256~[\\w-]{43}"),
    R(
        "kubernetes-secret-yaml",
        r"(?is)kind:\s{0,9}['\"]?secret['\"]?\s.{0,400}?data:\s{0,9}\n" + _K8S_VALUE,
    ),
    R(
        "kubernetes-secret-yaml",
        r"(?is)data:\s{0,9}\n" + _K8S_VALUE + r"['\"]?\s.{0,400}?kind:\s{0,9}['\"]?secret['\"]?\s",
    ),
    P("hashicorp-vault-token", r"hv[sb]\.[\w-]{90,120}", end=False),
    P("hashicorp-vault-token", r"hv[sb]\.[\w-]{24,}", end=False),
    K("hashicorp-vault-token", "vault", r"s\.[a-z0-9]{24}"),
    P("hashicorp-tf-api-token", r"[a-z0-9]{14}\.atlasv1\.[a-z0-9\-_=]{60,70}"),
    R(
        "hashicorp-tf-password",
        r"(?i)(?:administrator_login_password|password)\s{0,3}=\s{0,3}\"([a-z0-9=_\-]{8,20})\"",
    ),
    P("pulumi-api-token", "pul-[a-f0-9]{40}"),
    P("doppler-api-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[a-zA-Z0-9]{40,44}"),
    P("cloudflare-origin-ca-key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    K("cloudflare-api-key", "cloudflare", "[a-z0-9_-]{40}"),
    K("cloudflare-global-api-key", "cloudflare", "[a-f0-9]{37}"),
    P("netlify-access-token", "nfp_[A-Za-z0-9]{36}"),
    K("netlify-access-token", "netlify", "[a-z0-9=_\\-]{40,46}"),
    P("vercel-token", "vc[pkiar]_[A-Za-z0-9]{56}"),
    K("vercel-token", "vercel", "[A-Za-z0-9]{24}"),
    P("render-api-key", "rnd_[A-Za-z0-9]{32}"),
    P("supabase-token", "sbp_[a-f0-9]{40}"),
    P("supabase-token", "sb_secret_[A-Za-z0-9_-]{31,}", end=False),
    P("railway-token", "railway_[A-Za-z0-9]{32,}", end=False),
    P("linode-token", "linode_[A-Za-z0-9]{64}"),
    K("linode-token", "linode", "[a-f0-9]{64}"),
    K("scaleway-key", "scaleway|scw", UUID),
    P("age-secret-key", "AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    # --- source hosting, CI/CD, registries
    P("github-pat", "ghp_[0-9a-zA-Z]{36}", checks=("crc32-base62",)),
    P("github-oauth", "gho_[0-9a-zA-Z]{36}", checks=("crc32-base62",)),
    P("github-app-token", "gh[us]_[0-9a-zA-Z]{36}", checks=("crc32-base62",)),
    P("github-refresh-token", "ghr_[0-9a-zA-Z]{36,76}", checks=("crc32-base62",)),
    P("github-fine-grained-pat", "github_pat_[0-9a-zA-Z_]{82}"),
    P("gitlab-pat", "glpat-[\\w-]{20}"),
    P("gitlab-pat-routable", r"glpat-[0-9a-zA-Z_-]{27,300}\.[0-9a-z]{2}[0-9a-z]{7}"),
    P("gitlab-ptt", "glptt-[0-9a-f]{40}"),
    P("gitlab-rrt", "GR1348941[\\w-]{20}"),
    P("gitlab-runner-token", "glrt-[0-9a-zA-Z_\\-]{20}"),
    P("gitlab-runner-token", r"glrt-t\d_[0-9a-zA-Z_\-]{27,300}\.[0-9a-z]{2}[0-9a-z]{7}"),
    P("gitlab-cicd-job-token", r"glcbt-[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_-]{20}"),
    P("gitlab-deploy-token", "gldt-[0-9a-zA-Z_\\-]{20}"),
    P("gitlab-feature-flag-client-token", "glffct-[0-9a-zA-Z_\\-]{20}"),
    P("gitlab-feed-token", "glft-[0-9a-zA-Z_\\-]{20}"),
    P("gitlab-incoming-mail-token", "glimt-[0-9a-zA-Z_\\-]{25}"),
    P("gitlab-kubernetes-agent-token", "glagent-[0-9a-zA-Z_\\-]{50}"),
    P("gitlab-oauth-app-secret", "gloas-[0-9a-zA-Z_\\-]{64}"),
    P("gitlab-scim-token", "glsoat-[0-9a-zA-Z_\\-]{20}"),
    R("gitlab-session-cookie", r"_gitlab_session=([0-9a-z]{32})"),
    K("bitbucket-client-id", "bitbucket", AN + "{32}"),
    K("bitbucket-client-secret", "bitbucket", "[a-z0-9=_\\-]{64}"),
    P("bitbucket-access-token", "ATBB[A-Za-z0-9_=.-]{28,}", end=False),
    P("atlassian-api-token", "ATATT3[A-Za-z0-9_\\-=]{186}"),
    P("atlassian-api-token", "ATCTT3[A-Za-z0-9_\\-=]{186}"),
    K("atlassian-api-token", "atlassian|confluence|jira", "[a-z0-9]{20}[a-f0-9]{4}|[a-z0-9]{24}"),
    K("gitea-token", "gitea", "[a-f0-9]{40}"),
    K("droneci-access-token", "droneci|drone", AN + "{32}"),
    K("travisci-access-token", "travis", AN + "{22}"),
    P("circleci-token", "CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    K("circleci-token", "circleci|circle", "[a-f0-9]{40}"),
    K("codecov-access-token", "codecov", AN + "{32}"),
    P("buildkite-token", "bkua_[a-f0-9]{40}"),
    P("harness-api-key", r"(?:pat|sat)\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9]{24}\.[a-zA-Z0-9]{20}"),
    P("octopus-deploy-api-key", "API-[A-Z0-9]{26}"),
    K("sonar-api-token", "sonar", "(?:squ_|sqp_|sqa_)?[a-z0-9=_\\-]{40}"),
    P("sonar-api-token", "sq[upa]_[a-f0-9]{40}"),
    K("snyk-api-token", "snyk", UUID),
    P("npm-access-token", "npm_[A-Za-z0-9]{36}", checks=("crc32-base62",)),
    P("pypi-upload-token", "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9\\-_]{16,}", end=False),
    P("pypi-upload-token", "pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9\\-_]{50,}", end=False),
    P("rubygems-api-token", "rubygems_[a-f0-9]{48}"),
    P("clojars-api-token", "(?i:CLOJARS_)[a-z0-9]{60}"),
    P("nuget-api-key", "oy2[a-z0-9]{43}"),
    P("dockerhub-pat", "dckr_pat_[A-Za-z0-9_-]{27}"),
    P("dockerhub-pat", "dckr_oat_[A-Za-z0-9_-]{32}"),
    P("artifactory-api-key", "AKCp[A-Za-z0-9]{69}"),
    P("artifactory-reference-token", "cmVmd[A-Za-z0-9]{59}"),
    K("jfrog-api-key", "jfrog|artifactory|bintray|xray", AN + "{73}"),
    K("jfrog-identity-token", "jfrog|artifactory|bintray|xray", AN + "{64}"),
    R(
        "nuget-config-password",
        r"(?i)<add\s+key=\"(?:(?:clear)?text_?)?password\"\s+value=\"([^\"]{8,})\"\s*/>",
    ),
    P("sourcegraph-access-token", "sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}"),
    P("sourcegraph-access-token", "sgp_[a-fA-F0-9]{40}"),
    P("sourcegraph-access-token", "sgs_[a-fA-F0-9]{40}"),
    K("sourcegraph-access-token", "sourcegraph", "[a-f0-9]{40}"),
    P("infracost-api-token", "ico-[a-zA-Z0-9]{32}"),
    P("prefect-api-token", "pnu_[a-zA-Z0-9]{36}"),
    P("postman-api-token", "PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    P("readme-api-token", "rdme_[a-z0-9]{70}"),
    P("linear-api-key", "lin_api_[a-zA-Z0-9]{40}"),
    K("linear-client-secret", "linear", "[a-f0-9]{32}"),
    P("defined-networking-api-token", "dnkey-[a-z0-9=_\\-]{26}-[a-z0-9=_\\-]{52}"),
    P("settlemint-token", "sm_(?:pat|aat|sat)_[a-zA-Z0-9]{16}"),
    P(
        "authress-service-client-access-key",
        r"(?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.(?:acc)[_-][a-z0-9-]{10,32}\.[a-z0-9+/_=-]{30,120}",
    ),
    P("typeform-api-token", "tfp_[a-z0-9\\-_\\.=]{59}"),
    # Figma personal access tokens begin with figd_
    P("figma-pat", "figd_[A-Za-z0-9_-]{32,}", end=False),
    P("frameio-api-token", "fio-u-[a-z0-9\\-_=]{64}"),
    P("notion-api-token", "ntn_[0-9]{11}[A-Za-z0-9]{32}[A-Za-z0-9]{3}"),
    P("notion-api-token", "secret_[A-Za-z0-9]{43}"),
    P("airtable-personal-access-token", r"pat[a-zA-Z0-9]{14}\.[a-f0-9]{64}"),
    K("airtable-api-key", "airtable", AN + "{17}"),
    P("1password-service-account-token", "ops_eyJ[a-zA-Z0-9+/]{250,}={0,3}", end=False),
    P(
        "1password-secret-key",
        r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    ),
    P(
        "bitwarden-access-token",
        r"0\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[A-Za-z0-9]{30}:[A-Za-z0-9+/]{22}==",
        end=False,
    ),
    # --- AI APIs
    P("anthropic-api-key", "sk-ant-(?:api|admin)0[0-9]-[a-zA-Z0-9_\\-]{93}AA"),
    P("anthropic-api-key", "sk-ant-(?:api|admin|sid|oat)0[0-9]-[a-zA-Z0-9_\\-]{20,}", end=False),
    P("openai-api-key", "sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}", end=False),
    P("openai-api-key", "sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}", end=False),
    P("openai-api-key", "sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20}"),
    P("openai-api-key", "sk-[a-zA-Z0-9]{48}"),
    P("huggingface-access-token", "hf_[a-zA-Z]{34}"),
    P("huggingface-access-token", "hf_[a-zA-Z0-9]{34,40}"),
    P("huggingface-organization-api-token", "api_org_[a-zA-Z]{34}"),
    K("cohere-api-token", "cohere|co_api_key", "[a-zA-Z0-9]{40}"),
    P("perplexity-api-key", "pplx-[a-zA-Z0-9]{48}"),
    P("groq-api-key", "gsk_[a-zA-Z0-9]{52}"),
    P("openrouter-api-key", "sk-or-v1-[a-f0-9]{64}"),
    P("firecrawl-api-key", "fc-[a-f0-9]{32}"),
    P("tailscale-key", "tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{10,}-[A-Za-z0-9]{20,}", end=False),
    P("xai-api-key", "xai-[a-zA-Z0-9]{80}"),
    P("replicate-api-token", "r8_[A-Za-z0-9]{37}"),
    K("deepseek-api-key", "deepseek", "sk-[a-f0-9]{32}"),
    K("mistral-api-key", "mistral", "[A-Za-z0-9]{32}"),
    K("google-gemini-api-key", "gemini", "AIza[0-9A-Za-z_-]{35}"),
    P("langsmith-api-key", "lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    P("pinecone-api-key", "pcsk_[A-Za-z0-9]{5,6}_[A-Za-z0-9]{60,70}", end=False),
    K("privateai-api-token", "private[_-]?ai", AN + "{32}"),
    # --- payments and commerce
    P("stripe-access-token", "(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99}"),
    P("stripe-webhook-secret", "whsec_[a-zA-Z0-9]{32,}", end=False),
    P("square-access-token", "(?:EAAA|sq0atp-)[\\w-]{22,60}"),
    P("square-secret", "sq0csp-[\\w\\-\\]\\\\]{43}", end=False),
    P("shopify-token", "shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    P("paypal-braintree-access-token", r"access_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32}"),
    P("flutterwave-key", "FLW(?:PUBK|SECK)_TEST-[a-hA-H0-9]{32}-X", end=False),
    P("flutterwave-encryption-key", "FLWSECK_TEST-[a-hA-H0-9]{12}"),
    P("shippo-api-token", "shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    P("duffel-api-token", "duffel_(?:test|live)_[a-z0-9_\\-=]{43}"),
    P("easypost-api-token", "EZ[AT]K[a-zA-Z0-9]{54}", end=False),
    P("gocardless-api-token", "live_[a-z0-9\\-_=]{40}"),
    P("lob-api-key", "(?:live|test)_[a-f0-9]{35}"),
    P("lob-pub-api-key", "(?:test|live)_pub_[a-f0-9]{31}"),
    P("plaid-api-token", "access-(?:sandbox|development|production)-" + UUID),
    K("plaid-client-id", "plaid", AN + "{24}"),
    K("plaid-secret-key", "plaid", AN + "{30}"),
    K("adyen-api-key", "adyen", "AQE[A-Za-z0-9+/=._-]{40,}"),
    K("coinbase-access-token", "coinbase", "[a-z0-9_-]{64}"),
    K("kraken-access-token", "kraken", "[a-z0-9/=_\\+\\-]{80,90}"),
    K("kucoin-access-token", "kucoin", "[a-f0-9]{24}"),
    K("kucoin-secret-key", "kucoin", UUID),
    K("bittrex-key", "bittrex", AN + "{32}"),
    K("finicity-client-secret", "finicity", AN + "{20}"),
    K("finicity-api-token", "finicity", "[a-f0-9]{32}"),
    K("freshbooks-access-token", "freshbooks", AN + "{64}"),
    K("etsy-access-token", "etsy", AN + "{24}"),
    K("squarespace-access-token", "squarespace", UUID),
    K("zendesk-secret-key", "zendesk", AN + "{40}"),
    R("freemius-secret-key", r"(?i)[\"']secret_key[\"']\s*=>\s*[\"'](sk_[\S]{29})[\"']"),
    # --- observability
    K("datadog-access-token", "datadog|dd_api|dd_app|ddog", AN + "{40}|[a-f0-9]{32}"),
    P("grafana-api-key", "eyJrIjoi[A-Za-z0-9]{70,400}={0,3}", end=False),
    P("grafana-cloud-api-token", "glc_[A-Za-z0-9+/]{32,400}={0,3}", end=False),
    P("grafana-service-account-token", "glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    P("new-relic-user-api-key", "NRAK-[A-Za-z0-9]{27}"),
    P("new-relic-insert-key", "NRII-[A-Za-z0-9-]{32}"),
    P("new-relic-browser-api-token", "NRJS-[a-f0-9]{19}"),
    P("new-relic-license-key", "[a-f0-9]{36}NRAL"),
    K("new-relic-user-api-id", "newrelic|new_relic|new-relic|nr_user|nr_api", AN + "{64}"),
    P("sentry-user-token", "sntryu_[a-f0-9]{64}"),
    P(
        "sentry-org-token",
        "sntrys_eyJpYXQiO[a-zA-Z0-9+/]{10,200}(?:LCJyZWdpb25fdXJs|InJlZ2lvbl91cmwi|cmVnaW9uX3VybCI6)[a-zA-Z0-9+/]{10,200}={0,2}_[a-zA-Z0-9+/]{43}",
        end=False,
    ),
    K("sentry-access-token", "sentry", "[a-f0-9]{64}"),
    # The host is bounded (a DNS name is at most 253 bytes) so the trigger window reaches every match.
    R("sentry-dsn", r"https?://([a-f0-9]{32})@[a-z0-9.\-]{0,253}(?:sentry\.io|ingest)"),
    P("dynatrace-api-token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    K("sumologic-access-id", "sumo", "su[a-zA-Z0-9]{12}"),
    K("sumologic-access-token", "sumo", AN + "{64}"),
    K("honeycomb-api-key", "honeycomb", "[a-z0-9]{22}|hc[a-z]{2}_[a-z0-9]{58}"),
    P("honeycomb-api-key", "hc[a-z]ik_[a-z0-9]{58}"),
    K("splunk-hec-token", "splunk", UUID),
    K("pagerduty-api-key", "pagerduty|pager_duty", "[a-z0-9_+\\-]{20}"),
    K("opsgenie-api-key", "opsgenie", UUID),
    K("rollbar-access-token", "rollbar", "[a-f0-9]{32}"),
    K("bugsnag-api-key", "bugsnag", "[a-f0-9]{32}"),
    K("launchdarkly-access-token", "launchdarkly", "[a-z0-9=_\\-]{40}"),
    P("launchdarkly-access-token", "(?:api|sdk|mob)-" + UUID),
    K("looker-client-id", "looker", AN + "{20}"),
    K("looker-client-secret", "looker", AN + "{24}"),
    K("algolia-api-key", "algolia", AN + "{32}"),
    # Mapbox: ``pk.``/``sk.``/``tk.`` then base64url JSON naming the user, then a signature.
    P("mapbox-api-token", r"[pst]k\.eyJ1Ijoi[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{20,}", end=False),
    K("mapbox-api-token", "mapbox", r"[pst]k\.[a-z0-9_-]{60,}\.[a-z0-9_-]{22}"),
    # --- databases and data platforms
    P("databricks-api-token", "dapi[a-f0-9]{32}(?:-[0-9]+)?"),
    P("clickhouse-cloud-api-secret-key", "4b1d[A-Za-z0-9]{38}"),
    P("planetscale-token", "pscale_(?:tkn|oauth|pw)_[\\w=\\.-]{32,64}"),
    P("mongodb-atlas-key", "mdb_sa_sk_[A-Za-z0-9_-]{40}", end=False),
    K("confluent-access-token", "confluent", AN + "{16}"),
    K("confluent-secret-key", "confluent", AN + "{64}"),
    K("upstash-token", "upstash", "[A-Za-z0-9_=-]{40,}"),
    K("pinecone-api-key", "pinecone", UUID),
    P("contentful-delivery-api-token", "CFPAT-[a-zA-Z0-9_\\-]{43}"),
    K("contentful-delivery-api-token", "contentful", "[a-z0-9=_\\-]{43}"),
    # --- messaging, mail, social
    P("slack-bot-token", "xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*", end=False),
    P("slack-user-token", "xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}", end=False),
    P("slack-app-token", "(?i:xapp)-[0-9]+-[A-Za-z0-9_]+-[0-9]+-[a-z0-9]+", end=False),
    P("slack-config-token", "xoxe\\.xox[bp]-[0-9]-[A-Z0-9]{163,166}"),
    P("slack-config-token", "(?i:xoxe\\.xox[bp]-[0-9]-[a-z0-9]{163,166})"),
    P("slack-config-refresh-token", "(?i:xoxe-[0-9]-[a-z0-9]{146})"),
    P("slack-legacy-bot-token", "xoxb-[0-9]{8,14}-[a-zA-Z0-9]{18,26}"),
    P("slack-legacy-workspace-token", "xox[ar]-(?:[0-9]-)?[0-9a-zA-Z]{8,48}", end=False),
    P("slack-token", "xox[aposr]-[0-9]{6,14}-[0-9]{6,14}-[A-Za-z0-9-]{10,}", end=False),
    P("slack-legacy-token", "xox[os]-[0-9]{3,}-[0-9]{3,}-[0-9]{3,}-[a-fA-F0-9]{10,}", end=False),
    R(
        "slack-webhook-url",
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/]{43,56}|[A-Za-z0-9_/]{20,})",
    ),
    R(
        "microsoft-teams-webhook",
        r"https?://[a-z0-9\-]{1,63}\.webhook\.office\.com/webhookb2/([a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}@[a-z0-9\-]{36}/IncomingWebhook/[a-z0-9]{32}/[a-z0-9\-]{36})",
    ),
    R(
        "microsoft-teams-webhook",
        r"//[a-z0-9\-]{1,63}\.webhook\.office\.com/webhookb2/([a-z0-9\-]{36}@[a-z0-9\-]{36}/IncomingWebhook/[a-z0-9]{32}/[a-z0-9\-]{36})",
    ),
    R("discord-webhook", r"discord(?:app)?\.com/api/webhooks/([0-9]{17,20}/[A-Za-z0-9_-]{60,68})"),
    P("discord-bot-token", r"[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}"),
    K("discord-api-token", "discord", "[a-f0-9]{64}"),
    K("discord-client-id", "discord", "[0-9]{18}"),
    K("discord-client-secret", "discord", "[a-z0-9=_\\-]{32}"),
    R("telegram-bot-api-token", r"(?:^|[^0-9])([0-9]{5,16}:A[a-zA-Z0-9_\-]{34})(?:[^0-9A-Za-z_\-]|$)"),
    P("twilio-api-key", "SK[0-9a-fA-F]{32}"),
    K("twilio-auth-token", "twilio", "[a-f0-9]{32}"),
    P("sendgrid-api-token", "SG\\.[a-zA-Z0-9=_\\-\\.]{60,70}"),
    P("sendinblue-api-token", "xkeysib-[a-f0-9]{64}-[a-zA-Z0-9]{16}"),
    P("brevo-api-key", "xsmtpsib-[a-f0-9]{64}-[a-zA-Z0-9]{16}"),
    P("mailgun-private-api-token", "key-[a-f0-9]{32}"),
    P("mailgun-pub-key", "pubkey-[a-f0-9]{32}"),
    K("mailgun-signing-key", "mailgun", "[a-h0-9]{32}-[a-h0-9]{8}-[a-h0-9]{8}"),
    P("mailchimp-api-key", "[a-f0-9]{32}-us[0-9]{1,2}"),
    K("postmark-token", "postmark", UUID),
    K("messagebird-api-token", "messagebird|message[_-]bird|message-bird", AN + "{25}"),
    K("messagebird-client-id", "messagebird|message[_-]bird|message-bird", UUID),
    K("mattermost-access-token", "mattermost", AN + "{26}"),
    K("sendbird-access-id", "sendbird", UUID),
    K("sendbird-access-token", "sendbird", "[a-f0-9]{40}"),
    K("intercom-api-key", "intercom", "[a-z0-9=_\\-]{60}"),
    K("gitter-access-token", "gitter", "[a-z0-9_-]{40}"),
    K("beamer-api-token", "beamer", "b_[a-z0-9=_\\-]{44}"),
    K("facebook-secret", "facebook", "[a-f0-9]{32}"),
    P("facebook-access-token", r"[0-9]{15,16}(?:\||%7C)[0-9A-Za-z\-_]{27,40}", end=False),
    P("facebook-page-access-token", "EAA[MC][a-zA-Z0-9]{100,}", end=False),
    K("twitter-api-key", "twitter", AN + "{25}"),
    K("twitter-api-secret", "twitter", AN + "{50}"),
    K("twitter-access-token", "twitter", "[0-9]{15,25}-[a-zA-Z0-9]{20,40}"),
    K("twitter-access-secret", "twitter", AN + "{45}"),
    K("twitter-bearer-token", "twitter", "A{22}[a-zA-Z0-9%]{80,100}"),
    P("twitter-bearer-token", "AAAAAAAAAAAAAAAAAAAAA[A-Za-z0-9%]{80,120}", end=False),
    K("linkedin-client-id", "linkedin|linked[_-]in", AN + "{14}"),
    K("linkedin-client-secret", "linkedin|linked[_-]in", AN + "{16}"),
    K("twitch-api-token", "twitch", AN + "{30}"),
    K("nytimes-access-token", "nytimes|new_york_times|new-york-times|newyorktimes", "[a-z0-9=_\\-]{32}"),
    K("dropbox-api-token", "dropbox", AN + "{15}"),
    P("dropbox-long-lived-token", "sl\\.[a-zA-Z0-9\\-=_]{135}", end=False),
    K("dropbox-long-lived-token", "dropbox", "[a-z0-9]{11}AAAAAAAAAA[a-z0-9\\-_=]{43}"),
    K("flickr-access-token", "flickr", AN + "{32}"),
    K("trello-access-token", "trello", "[a-zA-Z0-9]{32}"),
    K("asana-client-id", "asana", "[0-9]{16}"),
    K("asana-client-secret", "asana", AN + "{32}"),
    K("adafruit-api-key", "adafruit", "[a-z0-9_-]{32}"),
    K("adobe-client-id", "adobe", "[a-f0-9]{32}"),
    P("adobe-client-secret", "p8e-[a-z0-9]{32}"),
    K("finnhub-access-token", "finnhub", AN + "{20}"),
    K("rapidapi-access-token", "rapidapi", "[a-z0-9_-]{50}"),
    K("fastly-api-token", "fastly", "[a-z0-9=_\\-]{32}"),
    K("hubspot-api-key", "hubspot", UUID),
    P("hubspot-pat", "pat-(?:na|eu)[0-9]-" + UUID),
    K("okta-access-token", "okta", "00[a-z0-9=_\\-]{40}"),
    K("maxmind-license-key", "maxmind|geoip", "[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk"),
    P("maxmind-license-key", "[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk"),
    K("meraki-api-key", "meraki", "[0-9a-f]{40}"),
    K("yandex-access-token", "yandex", r"t1\.[A-Z0-9a-z_-]+[=]{0,2}\.[A-Z0-9a-z_-]{86}[=]{0,2}"),
    K("intra42-client-secret", "intra|42", r"s-s4t2(?:ud|af)-[a-f0-9]{64}"),
    P("intra42-client-secret", r"s-s4t2(?:ud|af)-[a-f0-9]{64}"),
    K(
        "sidekiq-secret",
        "bundle_enterprise__contribsys__com|bundle_gems__contribsys__com",
        "[a-f0-9]{8}:[a-f0-9]{8}",
    ),
    R(
        "sidekiq-sensitive-url",
        r"(?i)https?://([a-f0-9]{8}:[a-f0-9]{8})@(?:gems|enterprise)\.contribsys\.com",
    ),
    # --- keys and blocks
    R(
        "private-key",
        r"(?i)(-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?KEY(?: BLOCK)?-----)",
    ),
    # The header alone counts (a key cut off, a file named in prose); a block whose END line
    # follows with no key material between (``anything``, nothing) is a stand-in (engine check).
    R("private-key", r"(-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----)"),
    R("putty-private-key", r"(PuTTY-User-Key-File-[0-9]+: )"),
    R(
        "jwt",
        r"(?:^|[^0-9A-Za-z_\-])(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9/\\_\-]{17,}\.(?:[a-zA-Z0-9/\\_\-]{10,}={0,2})?)",
    ),
    # --- command lines and config formats
    R(
        "curl-auth-user",
        r"(?:^|[\s;|&(`=])curl\b(?:[^\n]|\\\n){0,400}?\s(?:-u|--user)\s*['\"]?([^\s'\"]{0,120}:['\"]?[^\s'\"]{0,120})['\"]?(?:\s|$)",
    ),
    R(
        "curl-auth-header",
        r"(?i)(?:^|[\s;|&(`=])curl\b[^\n]{0,400}?\s(?:-H|--header)\s*['\"]\s*(?:Authorization|X-Api-Key|Api-Key|X-Auth-Token|Private-Token|X-Token)\s*:\s*(?:Bearer|Basic|Token|Api-Token|Key)?\s*([^\s'\"]{8,})",
    ),
    # mysql/mariadb take the password glued to -p (``-pS3cret``, ``-p'S3cret'``); ``-p db`` prompts.
    R(
        "mysql-cli-password",
        r"(?:^|[\s;|&(`])(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,300}?\s-p['\"]?([^\s'\"]{4,120})",
    ),
    # Terraform: ``variable "db_password" { default = "..." }`` names the secret in the block header.
    R(
        "terraform-variable-default",
        r"(?i)variable\s+\"[\w-]{0,40}(?:password|passwd|secret|token|api_key|apikey|access_key|private_key)"
        r"[\w-]{0,20}\"\s*\{[^}]{0,300}?default\s*=\s*\"([^\"\n$]{6,200})\"",
    ),
    R("basic-auth-header", r"(?i)Authorization\s*:\s*Basic\s+([A-Za-z0-9+/]{12,}={0,2})"),
    R("bearer-token", r"(?i)Authorization\s*:\s*Bearer\s+([A-Za-z0-9._~+/\-]{20,}={0,2})"),
    R(
        "connection-string-password",
        r"(?i)(?:^|[;\s\"'])(?:password|pwd)\s*=\s*([^;\s\"'{}$<>%]{6,})(?:;|\s|$|[\"'])",
    ),
)
