package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// The environment variables that turn signing on.
const (
	EnvSignKey          = "HYBRIDCTL_SIGN_KEY"           // the private key's file (PEM or DER)
	EnvSignCert         = "HYBRIDCTL_SIGN_CERT"          // the certificate chain's file (PEM: the code-signing certificate first)
	EnvSignPasswordFile = "HYBRIDCTL_SIGN_PASSWORD_FILE" // optional: a file holding the key's passphrase
	EnvSignTimestampURL = "HYBRIDCTL_SIGN_TIMESTAMP_URL" // optional: an RFC 3161 timestamp server
	EnvSignTool         = "HYBRIDCTL_SIGN_OSSLSIGNCODE"  // optional: osslsigncode's path (default: from PATH)
)

// Signer gives the Windows executable an Authenticode signature with
// osslsigncode.
type Signer struct {
	Key, Cert    string
	PasswordFile string
	TimestampURL string
	Tool         string
	// Description and URL are the signature's program name and link.
	Description, URL string
}

// SignerFromEnv returns the Signer the environment asks for, or nil when
// neither the key nor the certificate is set. One without the other, a
// missing file, or a key or passphrase file that others can read is an
// error.
func SignerFromEnv(getenv func(string) string) (*Signer, error) {
	s := &Signer{Key: getenv(EnvSignKey), Cert: getenv(EnvSignCert), PasswordFile: getenv(EnvSignPasswordFile),
		TimestampURL: getenv(EnvSignTimestampURL), Tool: getenv(EnvSignTool)}
	if s.Key == "" && s.Cert == "" {
		if s.PasswordFile != "" || s.TimestampURL != "" {
			return nil, fmt.Errorf("%s or %s is set but not %s and %s: nothing to sign with", EnvSignPasswordFile, EnvSignTimestampURL, EnvSignKey, EnvSignCert)
		}
		return nil, nil
	}
	var errs []error
	if s.Key == "" || s.Cert == "" {
		errs = append(errs, fmt.Errorf("signing needs both %s and %s (only one is set)", EnvSignKey, EnvSignCert))
	}
	for _, f := range []struct {
		env, path string
		secret    bool
	}{
		{EnvSignKey, s.Key, true}, {EnvSignCert, s.Cert, false}, {EnvSignPasswordFile, s.PasswordFile, true},
	} {
		if f.path == "" {
			continue
		}
		fi, err := os.Stat(f.path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.env, err))
			continue
		}
		if !fi.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("%s: %s is not a regular file", f.env, f.path))
		}
		if f.secret && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
			errs = append(errs, fmt.Errorf("%s: %s is readable by others (mode %04o): chmod 600 it", f.env, f.path, fi.Mode().Perm()))
		}
	}
	if s.TimestampURL != "" && !strings.HasPrefix(s.TimestampURL, "http://") && !strings.HasPrefix(s.TimestampURL, "https://") {
		errs = append(errs, fmt.Errorf("%s %q: want an http:// or https:// URL of an RFC 3161 timestamp server", EnvSignTimestampURL, s.TimestampURL))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if s.Tool == "" {
		s.Tool = "osslsigncode"
	}
	return s, nil
}

// args are osslsigncode's arguments: SHA-256, the program name and URL,
// the RFC 3161 timestamp when a server is set. The passphrase is read from
// its file by osslsigncode, never passed in argv.
func (s *Signer) args(in, out string) []string {
	a := []string{"sign", "-certs", s.Cert, "-key", s.Key}
	if s.PasswordFile != "" {
		a = append(a, "-readpass", s.PasswordFile)
	}
	a = append(a, "-h", "sha256", "-n", s.Description, "-i", s.URL)
	if s.TimestampURL != "" {
		a = append(a, "-ts", s.TimestampURL)
	}
	return append(a, "-in", in, "-out", out)
}

// Sign writes out, in signed. out must not exist.
func (s *Signer) Sign(ctx context.Context, in, out string) error {
	cmd := exec.CommandContext(ctx, s.Tool, s.args(in, out)...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Run(); err != nil {
		_ = os.Remove(out)
		return fmt.Errorf("signing %s with %s: %w\n%s", in, s.Tool, err, strings.TrimSpace(errb.String()))
	}
	return nil
}
