package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

// KnownHosts verifies host keys against an OpenSSH known_hosts file.
// An unknown key is refused unless AcceptNew is set, in which case it is
// appended to the file (atomically); a key that differs from the recorded
// one is always refused. One KnownHosts is shared by all clients of a run,
// so concurrent appends do not race.
type KnownHosts struct {
	// Path is the known_hosts file (usually ~/.ssh/known_hosts). It may not
	// exist yet.
	Path string
	// AcceptNew appends keys of hosts that are not in the file yet
	// (--accept-new-host-keys), like OpenSSH's StrictHostKeyChecking=accept-new.
	AcceptNew bool

	mu sync.Mutex
}

// UnknownHostKeyError is returned for a host that has no key in known_hosts
// when new keys are not accepted.
type UnknownHostKeyError struct {
	Host, Address, KnownHostsPath string
	Key                           ssh.PublicKey
}

func (e *UnknownHostKeyError) Error() string {
	return fmt.Sprintf("host key of %s (%s) is not in %s: the server presented %s %s; "+
		"verify that fingerprint out of band (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub on the host), then run again with --accept-new-host-keys",
		e.Host, e.Address, e.KnownHostsPath, e.Key.Type(), ssh.FingerprintSHA256(e.Key))
}

// HostKeyChangedError is returned when the server's key differs from the
// one in known_hosts. It is never accepted automatically.
type HostKeyChangedError struct {
	Host, Address string
	Presented     ssh.PublicKey
	Known         []knownhosts.KnownKey
}

func (e *HostKeyChangedError) Error() string {
	known := ""
	for i, k := range e.Known {
		if i > 0 {
			known += ", "
		}
		known += fmt.Sprintf("%s %s (%s:%d)", k.Key.Type(), ssh.FingerprintSHA256(k.Key), k.Filename, k.Line)
	}
	return fmt.Sprintf("HOST KEY OF %s (%s) HAS CHANGED: known_hosts has %s, the server presented %s %s. "+
		"Someone may be intercepting the connection, or the host was reinstalled. If you are sure it was reinstalled, "+
		"remove the old key (ssh-keygen -R %s) and verify the new one out of band; hybridctl never replaces a changed key",
		e.Host, e.Address, known, e.Presented.Type(), ssh.FingerprintSHA256(e.Presented), knownhosts.Normalize(e.Address))
}

// load parses the file; a missing file is an empty database.
func (k *KnownHosts) load() (ssh.HostKeyCallback, error) {
	if _, err := os.Stat(k.Path); errors.Is(err, fs.ErrNotExist) {
		return knownhosts.New()
	}
	cb, err := knownhosts.New(k.Path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", k.Path, err)
	}
	return cb, nil
}

// callback returns the HostKeyCallback for host (its name, for messages).
func (k *KnownHosts) callback(ctx context.Context, host string) ssh.HostKeyCallback {
	return func(address string, remote net.Addr, key ssh.PublicKey) error {
		k.mu.Lock()
		defer k.mu.Unlock()
		cb, err := k.load()
		if err != nil {
			return err
		}
		err = cb(address, remote, key)
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &re):
			return fmt.Errorf("host key of %s (%s) is revoked in %s:%d", host, address, re.Revoked.Filename, re.Revoked.Line)
		case errors.As(err, &ke) && len(ke.Want) > 0:
			return &HostKeyChangedError{Host: host, Address: address, Presented: key, Known: ke.Want}
		case errors.As(err, &ke):
			if !k.AcceptNew {
				return &UnknownHostKeyError{Host: host, Address: address, KnownHostsPath: k.Path, Key: key}
			}
			return k.appendLocked(ctx, address, key)
		default:
			return fmt.Errorf("verifying host key of %s (%s): %w", host, address, err)
		}
	}
}

// appendLocked adds a line for address to the file, rewriting it
// atomically (0600) so that a crash never leaves it half-written.
func (k *KnownHosts) appendLocked(ctx context.Context, address string, key ssh.PublicKey) error {
	old, err := os.ReadFile(k.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", k.Path, err)
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(address)}, key) + "\n"
	if err := atomicfile.MkdirAll(filepath.Dir(k.Path), 0o700); err != nil {
		return fmt.Errorf("adding host key of %s: %w", address, err)
	}
	if err := atomicfile.Write(ctx, k.Path, append(old, line...), 0o600, atomicfile.Options{}); err != nil {
		return fmt.Errorf("adding host key of %s: %w", address, err)
	}
	return nil
}

// algorithms returns the host key algorithms known for address, so the
// handshake asks the server for the key type that is on file (otherwise a
// server offering RSA first would look like a changed ed25519 key).
func (k *KnownHosts) algorithms(address string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	cb, err := k.load()
	if err != nil {
		return nil
	}
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil
	}
	probe, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if err := cb(address, &net.TCPAddr{IP: net.IPv4zero}, probe); !errors.As(err, &ke) {
		return nil
	}
	seen := map[string]bool{}
	var algos []string
	add := func(a ...string) {
		for _, x := range a {
			if !seen[x] {
				seen[x] = true
				algos = append(algos, x)
			}
		}
	}
	for _, w := range ke.Want {
		switch t := w.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	return algos
}
