// Package redact removes secrets from text that came from a node: logs,
// configuration files, command output. What a node prints is kept in
// support bundles (node diagnose --collect), shown in reports and in
// apply's failed steps, and sent to whoever helps; a token or a key in it
// must not go along.
//
// Redaction is an ordered table of patterns (Rules), each with a fixture
// that it must redact and a near miss that no rule may touch; docs/node.md
// lists them. The table finds secrets by their form or by the name they are
// given; it cannot know a secret printed without either (a bare password on
// a line of its own), and that is said in the docs too.
package redact

import (
	"fmt"
	"regexp"
	"strings"
)

// Rule is one pattern of the table.
type Rule struct {
	// Name identifies the rule in docs and tests.
	Name string
	// Doc says what it redacts (docs/node.md is written from it).
	Doc string
	re  *regexp.Regexp
	// with replaces each match ($1... keep what is not secret, such as the
	// key's name).
	with string
	// Fixture must be redacted by the table: Secret must not survive.
	Fixture, Secret string
	// NearMiss looks like it but is no secret: the table leaves it whole.
	NearMiss string
}

// secretWords are the words that make a field's name a secret's, in any
// case: secret, password, passwd, token, api key, access key, private key,
// credential(s), session key, account key, shared access key.
const secretWords = `(?i:secret|passw(?:or)?d|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|session[_-]?key|account[_-]?key|shared[_-]?access[_-]?key)`

// secretKey matches the name of a field that holds a secret: a name
// containing one of secretWords, or auth (a registry's auth field).
const secretKey = `(?:[A-Za-z0-9_.-]*` + secretWords + `[A-Za-z0-9_.-]*|(?i:auth))`

// kvSecretKey is secretKey without dots: a dotted name still matches from
// its last part (spring.datasource.password), and klog's file:line
// (credential_provider.go:42]) is no key.
const kvSecretKey = `(?:[A-Za-z0-9_-]*` + secretWords + `[A-Za-z0-9_-]*|(?i:auth))`

// jsonSecretKey is secretKey and the HTTP authorization headers' names,
// which the authorization-header rule handles in their header form.
const jsonSecretKey = `(?:` + secretKey + `|(?i:authorization|proxy-authorization))`

// Rules is the table, in the order it is applied: the multi-line and most
// specific forms first, then the names given to secrets, then the bare
// forms of well-known tokens.
func Rules() []Rule {
	return []Rule{
		{Name: "pem-private-key", Doc: "PEM private keys of every kind (`-----BEGIN ... PRIVATE KEY-----` to its END line, over any number of lines, or to the end of the text when the END line was cut off); certificates are public and kept",
			re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`), with: "<redacted PEM private key>",
			Fixture: "key:\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBSECRETkeymaterialXYZ\n-----END EC PRIVATE KEY-----\nnext", Secret: "MHcCAQEEIBSECRETkeymaterialXYZ",
			NearMiss: "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUpublic\n-----END CERTIFICATE-----"},
		{Name: "kubeconfig-data", Doc: "kubeconfig `*-data` fields (`client-key-data`, `client-certificate-data`, `certificate-authority-data`, `token-data`)",
			re: regexp.MustCompile(`(?i)("?[a-z-]*(?:key|token|certificate|cert|authority)-data"?[ \t]*:[ \t]*)"?[A-Za-z0-9+/=_.-]+"?`), with: "${1}<redacted>",
			Fixture: "    client-key-data: c2VjcmV0LWNsaWVudC1rZXk=", Secret: "c2VjcmV0LWNsaWVudC1rZXk=",
			NearMiss: "    server: https://192.168.10.23:6443"},
		{Name: "jwt", Doc: "JSON Web Tokens (`eyJ...`: ServiceAccount tokens, OIDC ID tokens)",
			re: regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+`), with: "<redacted JWT>",
			Fixture: "using eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl now", Secret: "eyJzdWIiOiJzeXN0ZW0ifQ",
			NearMiss: "eyJust kidding.not a token"},
		{Name: "authorization-header", Doc: "HTTP `Authorization:` and `Proxy-Authorization:` headers, whatever the scheme (`Basic`, `Bearer`, `Digest`, ...): the scheme is kept, the credentials go",
			re: regexp.MustCompile(`(?i)\b((?:proxy-)?authorization[ \t]*:[ \t]*)(?:(basic|bearer|digest|negotiate|token|aws4-hmac-sha256)[ \t]+)?[^\s][^\r\n]*`), with: "${1}${2} <redacted>",
			Fixture: "> Authorization: Basic dXNlcjpodW50ZXIy", Secret: "dXNlcjpodW50ZXIy",
			NearMiss: "authorization:\n  mode: Webhook\nauthorizer ready"},
		{Name: "bearer-token", Doc: "`Bearer TOKEN` anywhere (a curl command line, an error message)",
			re: regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}`), with: "${1}<redacted>",
			Fixture: `curl -H "X: Bearer 0123456789abcdefSECRET" https://x`, Secret: "0123456789abcdefSECRET",
			NearMiss: "the bearer of bad news"},
		{Name: "url-credentials", Doc: "the password of a URL's user information (`https://user:PASSWORD@host`, a proxy or a registry mirror); the user is kept",
			re: regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+@`), with: "${1}<redacted>@",
			Fixture: "https_proxy=http://proxyuser:Pr0xyPass@10.0.0.1:3128", Secret: "Pr0xyPass",
			NearMiss: "https://k8s-lab-api.example.com:6443/healthz"},
		{Name: "cookie-header", Doc: "HTTP `Cookie:` and `Set-Cookie:` header values",
			re: regexp.MustCompile(`(?i)\b((?:set-)?cookie\s*:\s*)[^\r\n]+`), with: "${1}<redacted>",
			Fixture: "Set-Cookie: session=abcdef0123456789; HttpOnly", Secret: "abcdef0123456789",
			NearMiss: "cookies are disabled"},
		{Name: "json-secret", Doc: "JSON string values whose key names a secret (`\"clientSecret\": \"...\"`, `\"password\"`, `\"token\"`, `\"apiKey\"`, `\"accessKey\"`, `\"privateKey\"`, `\"credentials\"`, a registry's `\"auth\"`), in any case",
			re: regexp.MustCompile(`("` + jsonSecretKey + `"\s*:\s*)"(?:[^"\\]|\\.)*"`), with: `${1}"<redacted>"`,
			Fixture: `{"tenantId": "t1", "clientSecret": "Zx8~Q_client.secret-value"}`, Secret: "Zx8~Q_client.secret-value",
			NearMiss: `{"author": "alice", "keyring": "/etc/apt/keyrings", "monkey": "banana"}`},
		{Name: "key-value-secret", Doc: "`key=value` and `key: value` forms whose key names a secret (`aws_secret_access_key=...`, `password: ...`, `AccountKey=...` in a connection string), quoted or not",
			re: regexp.MustCompile(`\b(` + kvSecretKey + `)([ \t]*[=:][ \t]*)("[^"\r\n]*"|'[^'\r\n]*'|[^\s"',;&]+)`), with: "${1}${2}<redacted>",
			Fixture: "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", Secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
			NearMiss: `I1206 credential_provider.go:42] "using" keyring=/etc/apt/keyrings author=alice user=admin`},
		{Name: "flag-secret", Doc: "command-line flags that name a secret, with their value after a space (`--token T`, `--password P`)",
			re: regexp.MustCompile(`(--` + kvSecretKey + `[ \t]+)("[^"\r\n]*"|'[^'\r\n]*'|[^\s"',;&-][^\s"',;&]*)`), with: "${1}<redacted>",
			Fixture: "kubeadm join 192.168.10.23:6443 --token abcdef.0123456789abcdeX --discovery-token-unsafe-skip-ca-verification", Secret: "abcdef.0123456789abcdeX",
			NearMiss: "the token expired; retry with --verbose"},
		{Name: "bootstrap-token", Doc: "kubeadm bootstrap tokens (`[a-z0-9]{6}.[a-z0-9]{16}`)",
			re: regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`), with: "<redacted bootstrap token>",
			Fixture: "kubeadm join --discovery-token abcdef.0123456789abcdef", Secret: "0123456789abcdef",
			NearMiss: "started cri-containerd-0123456789abcdef.scope"},
		{Name: "aws-access-key-id", Doc: "AWS access key IDs (`AKIA...`, `ASIA...`: 20 characters)",
			re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}\b`), with: "<redacted AWS access key>",
			Fixture: "using key AKIAIOSFODNN7EXAMPLE for s3", Secret: "AKIAIOSFODNN7EXAMPLE",
			NearMiss: "AKIAIOSFODNN7 is too short"},
		{Name: "gcp-api-key", Doc: "Google API keys (`AIza` and 35 characters)",
			re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`), with: "<redacted Google API key>",
			Fixture: "key AIzaSyA1234567890abcdefghijklmnopqrstuv end", Secret: "AIzaSyA1234567890abcdefghijklmnopqrstuv",
			NearMiss: "AIzawhatever"},
		{Name: "github-token", Doc: "GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`)",
			re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b`), with: "<redacted GitHub token>",
			Fixture: "clone with ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", Secret: "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
			NearMiss: "ghp_short"},
		{Name: "slack-token", Doc: "Slack tokens (`xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`)",
			re: regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`), with: "<redacted Slack token>",
			Fixture: "notify xoxb-123456789012-abcdefghijkl", Secret: "xoxb-123456789012-abcdefghijkl",
			NearMiss: "xoxo hugs"},
	}
}

// rules is the compiled table, shared: regexp.Regexp is safe for
// concurrent use and Rules builds the same table every time.
var rules = Rules()

// String returns s with every match of every rule replaced, in order.
func String(s string) string {
	for _, r := range rules {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

// Bytes is String for a byte slice.
func Bytes(b []byte) []byte {
	for _, r := range rules {
		b = r.re.ReplaceAll(b, []byte(r.with))
	}
	return b
}

// Markdown is the table of rules for docs/node.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| # | rule | what is redacted |\n|---|---|---|\n")
	for i, r := range Rules() {
		fmt.Fprintf(&b, "| %d | `%s` | %s |\n", i+1, r.Name, strings.ReplaceAll(r.Doc, "|", `\|`))
	}
	return b.String()
}
