package csr

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// maxRequestBytes bounds what ParseRequest decodes. A kubelet's request is
// well under 2 KiB; the bound keeps a hostile object from costing much.
const maxRequestBytes = 64 << 10

// ParseRequest decodes spec.request strictly: exactly one PEM block of type
// CERTIFICATE REQUEST, no PEM headers, nothing but whitespace after it, and a
// PKCS#10 body that x509 accepts. It does not check the self-signature (see
// Prepare) so that the two failures are reported separately.
func ParseRequest(data []byte) (*x509.CertificateRequest, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("spec.request is empty")
	}
	if len(data) > maxRequestBytes {
		return nil, fmt.Errorf("spec.request is %d bytes, more than the %d a serving-certificate request needs", len(data), maxRequestBytes)
	}
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("spec.request holds no PEM block")
	}
	if block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("spec.request holds a PEM block of type %q, want \"CERTIFICATE REQUEST\"", block.Type)
	}
	if len(block.Headers) > 0 {
		return nil, errors.New("spec.request has PEM headers; a certificate request has none")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("spec.request has data after the CERTIFICATE REQUEST block")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("spec.request is not a valid PKCS#10 request: %w", err)
	}
	return req, nil
}
