package transport

import (
	"encoding/pem"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func pemEncode(b *pem.Block) []byte { return pem.EncodeToMemory(b) }

func knownHostsLine(addr string, key ssh.PublicKey) string {
	return knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
}
