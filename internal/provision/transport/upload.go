package transport

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// uploadChunk is the number of bytes per base64 line sent to PowerShell.
const uploadChunk = 3 * 1024

// Upload writes data to dst on the host with mode (Linux) and replaces any
// existing file atomically: the data goes over the session's stdin (never a
// command line), into a temporary file in the same directory, then is
// renamed. On Linux the temporary file is created under umask 077, so a
// secret is never readable by others, even for a moment. On Windows, mode
// 0600 or stricter (no group/other bits) removes inherited permissions and
// grants only Administrators and SYSTEM.
func (c *Client) Upload(ctx context.Context, dst string, data []byte, mode fs.FileMode) error {
	if dst == "" {
		return fmt.Errorf("upload to %s: empty destination path", c.cfg.Host)
	}
	var err error
	if c.cfg.OS == engine.Windows {
		_, err = c.RunWithStdin(ctx, windowsUploadScript(dst, mode), bytes.NewReader(base64Lines(data)))
	} else {
		_, err = c.RunWithStdin(ctx, linuxUploadScript(dst, mode), bytes.NewReader(data))
	}
	if err != nil {
		return fmt.Errorf("uploading %s to %s: %w", dst, c.cfg.Host, err)
	}
	return nil
}

func linuxUploadScript(dst string, mode fs.FileMode) string {
	dir := path.Dir(dst)
	return fmt.Sprintf(`set -e
umask 077
mkdir -p %[1]s
tmp=$(mktemp %[1]s/.hybridctl-upload.XXXXXX)
trap 'rm -f "$tmp"' EXIT
cat > "$tmp"
chmod %04[3]o "$tmp"
mv -f "$tmp" %[2]s
trap - EXIT`, ShellQuote(dir), ShellQuote(dst), mode.Perm())
}

func windowsUploadScript(dst string, mode fs.FileMode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$dst = %s\n", PSQuote(dst))
	b.WriteString(`$dir = Split-Path -Parent $dst
if ($dir) { New-Item -ItemType Directory -Force -Path $dir | Out-Null }
$tmp = "$dst.hybridctl-upload"
$f = [System.IO.File]::Open($tmp, [System.IO.FileMode]::Create, [System.IO.FileAccess]::Write)
try {
  while ($null -ne ($line = [Console]::In.ReadLine())) {
    if ($line.Length -gt 0) { $bytes = [Convert]::FromBase64String($line); $f.Write($bytes, 0, $bytes.Length) }
  }
} finally { $f.Close() }
`)
	if mode.Perm()&0o077 == 0 {
		b.WriteString(`Invoke-Native 'icacls.exe' @($tmp, '/inheritance:r', '/grant:r', '*S-1-5-32-544:F', '*S-1-5-18:F') | Out-Null
`)
	}
	b.WriteString("Move-Item -Force -LiteralPath $tmp -Destination $dst\n")
	return b.String()
}

// base64Lines encodes data as base64 lines of uploadChunk input bytes.
func base64Lines(data []byte) []byte {
	var b bytes.Buffer
	for len(data) > 0 {
		n := min(uploadChunk, len(data))
		b.WriteString(base64.StdEncoding.EncodeToString(data[:n]))
		b.WriteByte('\n')
		data = data[n:]
	}
	return b.Bytes()
}
