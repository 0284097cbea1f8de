package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// signers collects the keys to offer: the SSH agent's (if a socket is
// given) and the key files'. An encrypted key file is an error that says to
// load it into the agent: hybridctl never asks for passphrases.
func signers(cfg *Config) ([]ssh.Signer, io.Closer, error) {
	var out []ssh.Signer
	var closer io.Closer
	if cfg.AgentSocket != "" {
		conn, err := net.Dial("unix", cfg.AgentSocket)
		if err != nil {
			return nil, nil, fmt.Errorf("connecting to the SSH agent at %s: %w", cfg.AgentSocket, err)
		}
		ss, err := agent.NewClient(conn).Signers()
		if err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("listing the SSH agent's keys: %w", err)
		}
		out = append(out, ss...)
		closer = conn
	}
	for _, f := range cfg.KeyFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			if closer != nil {
				_ = closer.Close()
			}
			return nil, nil, fmt.Errorf("reading SSH key: %w", err)
		}
		s, err := ssh.ParsePrivateKey(data)
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			if closer != nil {
				_ = closer.Close()
			}
			return nil, nil, fmt.Errorf("SSH key %s is encrypted: load it into ssh-agent (ssh-add %s) and set SSH_AUTH_SOCK", f, f)
		}
		if err != nil {
			if closer != nil {
				_ = closer.Close()
			}
			return nil, nil, fmt.Errorf("SSH key %s: %w", f, err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		if closer != nil {
			_ = closer.Close()
		}
		return nil, nil, errors.New("no SSH keys: give key files or run an SSH agent (SSH_AUTH_SOCK)")
	}
	return out, closer, nil
}
