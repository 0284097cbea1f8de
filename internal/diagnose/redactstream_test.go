package diagnose

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRedactingWriter: the stream redaction gives the same text as Redact
// on the whole output, however the stream is split into writes (a PEM
// block across writes and lines included); an over-long line is cut at
// maxRedactLine; past max, lines are counted, not kept.
func TestRedactingWriter(t *testing.T) {
	const key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n"
	in := "Dec 06 kubelet[1]: token=abcdef.0123456789abcdef joined\n" +
		"a key follows\n" + key +
		`{"password": "s3cr3t-registry-password", "user": "u"}` + "\n" +
		"plain line\n"
	want := string(Redact([]byte(in)))
	for _, secret := range []string{"0123456789abcdef", "s3cr3t", "MIIEvQ", "BKcwgg"} {
		if strings.Contains(want, secret) {
			t.Fatalf("Redact leaves %q: %q", secret, want)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		var out bytes.Buffer
		w := newRedactingWriter(&out, 1<<20)
		rest := []byte(in)
		for len(rest) > 0 {
			n := 1 + r.IntN(min(len(rest), 40))
			if _, err := w.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("split %d:\ngot  %q\nwant %q", i, out.String(), want)
		}
	}

	var out bytes.Buffer
	// A certificate is not a secret: kept, line by line, as Redact keeps it.
	out.Reset()
	const cert = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUY\n-----END CERTIFICATE-----\n"
	w0 := newRedactingWriter(&out, 1<<20)
	_, _ = w0.Write([]byte(cert))
	_ = w0.Close()
	if got := out.String(); got != cert || string(Redact([]byte(cert))) != cert {
		t.Errorf("a certificate: %q (Redact: %q)", got, Redact([]byte(cert)))
	}

	// An over-long line: its start is kept and redacted, the rest noted.
	w := newRedactingWriter(&out, 1<<20)
	long := "token=abcdef.0123456789abcdef " + strings.Repeat("x", 2*maxRedactLine) + "\nnext\n"
	for _, part := range []string{long[:100], long[100 : maxRedactLine+10], long[maxRedactLine+10:]} {
		_, _ = w.Write([]byte(part))
	}
	_ = w.Close()
	got := out.String()
	if strings.Contains(got, "0123456789abcdef") || !strings.Contains(got, "token=<redacted>") ||
		!strings.Contains(got, " [hybridctl: the rest of this line is not kept]\nnext\n") || len(got) > maxRedactLine+200 {
		t.Errorf("over-long line: %d bytes, %q ... %q", len(got), got[:60], got[len(got)-120:])
	}

	// The cap: only whole lines up to max input bytes, then a count; an
	// unfinished PEM block within it is still replaced.
	out.Reset()
	w = newRedactingWriter(&out, 100)
	_, _ = w.Write([]byte("a\n-----BEGIN EC PRIVATE KEY-----\nabc"))
	_ = w.Close()
	if got := out.String(); got != "a\n<redacted PEM private key>, unfinished\n" {
		t.Errorf("unfinished PEM: %q", got)
	}
	out.Reset()
	w = newRedactingWriter(&out, 25)
	_, _ = w.Write([]byte("0123456789\n0123456789\n0123456789\n-----BEGIN PRIVATE KEY-----\nabc\n"))
	_ = w.Close()
	if got := out.String(); got != "0123456789\n0123456789\n[hybridctl: 43 more bytes of the output are not kept here]\n" {
		t.Errorf("capped: %q", got)
	}
}
