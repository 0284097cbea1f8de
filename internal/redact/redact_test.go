package redact

import (
	"strings"
	"testing"
)

// TestRules: every rule's fixture loses its secret through the whole table,
// and every near miss goes through the whole table unchanged.
func TestRules(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if r.Name == "" || r.Doc == "" || r.Fixture == "" || r.Secret == "" || r.NearMiss == "" {
			t.Errorf("rule %q lacks a name, doc, fixture, secret or near miss", r.Name)
		}
		if seen[r.Name] {
			t.Errorf("rule %q listed twice", r.Name)
		}
		seen[r.Name] = true
		if !strings.Contains(r.Fixture, r.Secret) {
			t.Errorf("%s: the fixture does not hold its secret", r.Name)
		}
		// The rule itself does the work, not a later one.
		if got := r.re.ReplaceAllString(r.Fixture, r.with); strings.Contains(got, r.Secret) {
			t.Errorf("%s: the rule alone leaves the secret: %q", r.Name, got)
		}
		if got := String(r.Fixture); strings.Contains(got, r.Secret) || !strings.Contains(got, "<redacted") {
			t.Errorf("%s: %q -> %q", r.Name, r.Fixture, got)
		}
		if got := String(r.NearMiss); got != r.NearMiss {
			t.Errorf("%s: the near miss %q was changed to %q", r.Name, r.NearMiss, got)
		}
		if got := string(Bytes([]byte(r.Fixture))); got != String(r.Fixture) {
			t.Errorf("%s: Bytes and String differ: %q, %q", r.Name, got, String(r.Fixture))
		}
	}
}

// TestRedactSpellings: the spellings that reached support bundles in clear,
// and what must stay for a diagnosis.
func TestRedactSpellings(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{`{"clientSecret": "Zx8~Q.client-secret"}`, "Zx8~Q.client-secret"},
		{`{"ClientSecret":"Zx8~Q.client-secret"}`, "Zx8~Q.client-secret"},
		{`{"password": "p\"ass"}`, `p\"ass`},
		{`{"token": "t0k3n-value"}`, "t0k3n-value"},
		{`{"apiKey": "k3y-value-1"}`, "k3y-value-1"},
		{`{"api_key": "k3y-value-2"}`, "k3y-value-2"},
		{`{"auths": {"reg:5000": {"auth": "dXNlcjpwYXNz"}}}`, "dXNlcjpwYXNz"},
		{`{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANsecret\n-----END PRIVATE KEY-----\n"}`, "MIIEvQIBADANsecret"},
		{"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI/K7MDENG"},
		{"AWS_SECRET_ACCESS_KEY = 'wJalrXUtnFEMI/K7MDENG'", "wJalrXUtnFEMI/K7MDENG"},
		{"aws_session_token=IQoJb3JpZ2luX2VjEXAMPLE", "IQoJb3JpZ2luX2VjEXAMPLE"},
		{"Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"},
		{"authorization: Bearer abc.def.ghi-jkl", "abc.def.ghi-jkl"},
		{"Proxy-Authorization: Digest username=\"u\", response=\"6629fae49393a05397450978507c4ef1\"", "6629fae49393a05397450978507c4ef1"},
		{"password=hunter2 user=admin", "hunter2"},
		{"token: 0123456789abcdefXYZ", "0123456789abcdefXYZ"},
		{"DefaultEndpointsProtocol=https;AccountName=lab;AccountKey=c2VjcmV0a2V5MDEyMzQ=;EndpointSuffix=core.windows.net", "c2VjcmV0a2V5MDEyMzQ="},
		{"--password 'hunter2 with spaces'", "hunter2 with spaces"},
		{"spring.datasource.password=dbPassw0rd", "dbPassw0rd"},
		{"kubeadm join --token abcdef.0123456789abcdef 192.168.10.23:6443", "0123456789abcdef"},
		{"bootstrap token abcdef.0123456789abcdef used", "0123456789abcdef"},
		{"key AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
		{"git https://oauth2:glpat-SECRET123@gitlab.example.com/x.git", "glpat-SECRET123"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n(log cut)", "b3BlbnNzaC1rZXktdjEAAAAA"},
	} {
		got := String(tc.in)
		if strings.Contains(got, tc.secret) {
			t.Errorf("%q -> %q keeps %q", tc.in, got, tc.secret)
		}
	}
	keep := []string{
		"172.21.41.0/26 via 172.21.41.1 dev vxlan.calico onlink",
		`"username": "mirror"`,
		"user=admin",
		"https://k8s-lab-api.example.com:6443",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		`E1206 08:00:00.000000 1234 kubelet.go:2345] "Error syncing pod" pod="kube-system/calico-node-x"`,
		"authorization:\n  mode: Webhook",
		`{"authentication": {"webhook": {"enabled": true}}, "authorization": {"mode": "Webhook"}}`,
		"image registry.k8s.io/pause:3.10.1 pulled",
		"--discovery-token-unsafe-skip-ca-verification",
	}
	for _, k := range keep {
		if got := String(k); got != k {
			t.Errorf("%q was changed to %q", k, got)
		}
	}
}

func FuzzRedact(f *testing.F) {
	for _, r := range Rules() {
		f.Add(r.Fixture)
		f.Add(r.NearMiss)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := String(s)
		// Redaction is stable: what it leaves has nothing more to take.
		if twice := String(once); twice != once {
			t.Fatalf("not stable:\n%q\n%q\n%q", s, once, twice)
		}
	})
}
