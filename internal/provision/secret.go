package provision

import (
	"fmt"
	"sort"
	"strings"
	"sync"
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
// A nil Redactor returns s unchanged.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// redactEvent redacts every free-text field of e.
func (r *Redactor) redactEvent(e Event) Event {
	if r == nil {
		return e
	}
	e.Reason = r.Redact(e.Reason)
	e.Error = r.Redact(e.Error)
	e.Output = r.Redact(e.Output)
	if len(e.Actions) > 0 {
		acts := make([]string, len(e.Actions))
		for i, a := range e.Actions {
			acts[i] = r.Redact(a)
		}
		e.Actions = acts
	}
	return e
}
