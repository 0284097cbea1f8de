package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hybridctl/hybridctl/internal/redact"
)

// Redacted is what a secret prints as.
const Redacted = "<redacted>"

// Secret holds a join token, a certificate key, a private key or a
// kubeconfig. Every way of printing it (fmt verbs, JSON, text marshalling)
// yields "<redacted>"; only Reveal returns the value, to be handed to the
// host over a session's stdin or a 0600 file, never on a command line.
type Secret struct{ value string }

// NewSecret wraps v.
func NewSecret(v string) Secret { return Secret{value: v} }

// Reveal returns the secret value. Call it only where the value goes to its
// destination.
func (s Secret) Reveal() string { return s.value }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.value == "" }

func (s Secret) String() string   { return Redacted }
func (s Secret) GoString() string { return Redacted }

// Format makes every fmt verb (%v %+v %#v %s %q %x ...) print Redacted.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler (YAML and others).
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// minRedactLen is the shortest value the Redactor replaces: shorter strings
// would mangle ordinary output and are not secrets on their own.
const minRedactLen = 6

// Redactor replaces known secret values in text. The engine passes every
// event (errors, command output, dry-run lines) through it, as a second
// line of defence behind the Secret type. It is safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string // longest first
}

// Add registers secrets. For multi-line values (PEM keys, kubeconfigs) every
// long line is registered too, since output may show them reflowed.
func (r *Redactor) Add(secrets ...Secret) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		v := s.value
		r.addLocked(v)
		if strings.Contains(v, "\n") {
			for _, l := range strings.Split(v, "\n") {
				l = strings.TrimSpace(l)
				if len(l) >= 16 && !strings.HasPrefix(l, "-----") {
					r.addLocked(l)
				}
			}
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

// AddBootstrapToken registers a kubeadm bootstrap token ("abcdef.0123456789abcdef")
// and, separately, its secret half, which kubeadm and kubectl print alone
// (for example in a bootstrap-token Secret's token-secret).
func (r *Redactor) AddBootstrapToken(tok Secret) {
	r.Add(tok)
	if _, secret, ok := strings.Cut(tok.value, "."); ok {
		r.Add(NewSecret(secret))
	}
}

func (r *Redactor) addLocked(v string) {
	if len(v) < minRedactLen {
		return
	}
	for _, s := range r.secrets {
		if s == v {
			return
		}
	}
	r.secrets = append(r.secrets, v)
}

// Redact returns s with every registered secret replaced by Redacted.
// Every occurrence of every secret is found in s first and overlapping
// ones are replaced together, so that two secrets overlapping in the text
// (or one occurrence overlapping another of the same secret) leave no part
// of either visible, which replacing one secret after another would not
// (the second no longer matches once the first is gone). A nil Redactor returns s
// unchanged.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	type span struct{ from, to int }
	var spans []span
	for _, v := range r.secrets {
		for at := 0; ; {
			i := strings.Index(s[at:], v)
			if i < 0 {
				break
			}
			spans = append(spans, span{at + i, at + i + len(v)})
			at += i + 1
		}
	}
	if len(spans) == 0 {
		return s
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	var b strings.Builder
	end := 0 // of the text written so far
	for i := 0; i < len(spans); {
		from, to := spans[i].from, spans[i].to
		for i++; i < len(spans) && spans[i].from < to; i++ {
			to = max(to, spans[i].to)
		}
		b.WriteString(s[end:from])
		b.WriteString(Redacted)
		end = to
	}
	b.WriteString(s[end:])
	return b.String()
}

// redactEvent redacts every free-text field of e: the known secrets
// everywhere, and the secrets that redact's table finds by their form in
// what came from the hosts (output, errors, reasons). Dry-run actions are
// hybridctl's own commands: only the known secrets are taken out of them.
func (r *Redactor) redactEvent(e Event) Event {
	e.Reason = redact.String(r.Redact(e.Reason))
	e.Error = redact.String(r.Redact(e.Error))
	e.Output = redact.String(r.Redact(e.Output))
	if r == nil {
		return e
	}
	if len(e.Actions) > 0 {
		acts := make([]string, len(e.Actions))
		for i, a := range e.Actions {
			acts[i] = r.Redact(a)
		}
		e.Actions = acts
	}
	return e
}
