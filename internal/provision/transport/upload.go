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
// secret is never readable by others, even for a moment. On Windows the
// temporary file is created with an ACL of Administrators and SYSTEM only
// (windowsReceiveScript); mode 0600 or stricter (no group/other bits)
// keeps that ACL on dst, a looser mode gives dst the directory's inherited
// permissions once it is in place.
func (c *Client) Upload(ctx context.Context, dst string, data []byte, mode fs.FileMode) error {
	if dst == "" {
		return fmt.Errorf("upload to %s: empty destination path", c.cfg.Host)
	}
	var err error
	if c.cfg.OS == engine.Windows {
		_, err = c.run(ctx, windowsUploadScript(dst, mode), bytes.NewReader(base64Lines(data)), Limits{}, false)
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
mkdir -p -- %[1]s
tmp=$(mktemp -- %[1]s/.hybridctl-upload.XXXXXX)
trap 'rm -f "$tmp"' EXIT
cat > "$tmp"
chmod %04[3]o -- "$tmp"
mv -f -- "$tmp" %[2]s
trap - EXIT`, ShellQuote(dir), ShellQuote(dst), mode.Perm())
}

func windowsUploadScript(dst string, mode fs.FileMode) string {
	return windowsReceiveScript(dst, "upload", "", mode.Perm()&0o077 == 0)
}

// windowsReceiveScript is the Windows side of Upload and UploadStream: it
// decodes the base64 lines of stdin into a temporary file beside dst and
// moves it over dst. The temporary file, DST.hybridctl-TAG-RANDOM, is created
// (FileMode CreateNew: never an existing file) with a protected ACL that
// grants Administrators and SYSTEM only, so nothing written to it is ever
// readable or writable by another account, whatever the directory's
// inherited permissions. With want (a lower-case sha256) the file is
// checked on the node before it replaces dst. A public file (private
// false) then gets the directory's inherited permissions (icacls /reset)
// once it is in place. Any failure removes the temporary file.
func windowsReceiveScript(dst, tag, want string, private bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$dst = %s\n", PSQuote(dst))
	if want != "" {
		fmt.Fprintf(&b, "$want = %s\n", PSQuote(want))
	}
	b.WriteString(`$dir = Split-Path -Parent $dst
if ($dir) { New-Item -ItemType Directory -Force -Path $dir | Out-Null }
$sec = New-Object System.Security.AccessControl.FileSecurity
$sec.SetAccessRuleProtection($true, $false)
foreach ($sid in @('S-1-5-32-544', 'S-1-5-18')) {
  $id = New-Object System.Security.Principal.SecurityIdentifier($sid)
  $sec.AddAccessRule((New-Object System.Security.AccessControl.FileSystemAccessRule($id, [System.Security.AccessControl.FileSystemRights]::FullControl, [System.Security.AccessControl.AccessControlType]::Allow)))
}
$tmp = $dst + '.hybridctl-` + tag + `-' + [guid]::NewGuid().ToString('N')
$f = [System.IO.FileStream]::new($tmp, [System.IO.FileMode]::CreateNew, [System.Security.AccessControl.FileSystemRights]::Write, [System.IO.FileShare]::None, 65536, [System.IO.FileOptions]::None, $sec)
try {
  try {
    while ($null -ne ($line = [Console]::In.ReadLine())) {
      if ($line.Length -gt 0) { $bytes = [Convert]::FromBase64String($line); $f.Write($bytes, 0, $bytes.Length) }
    }
  } finally { $f.Close() }
`)
	if want != "" {
		b.WriteString(`  $got = (Get-FileHash -LiteralPath $tmp -Algorithm SHA256).Hash.ToLowerInvariant()
  if ($got -ne $want) { throw "the received file has sha256 $got, want $want; nothing was replaced" }
`)
	}
	b.WriteString(`  Move-Item -Force -LiteralPath $tmp -Destination $dst
} catch {
  Remove-Item -Force -LiteralPath $tmp -ErrorAction SilentlyContinue
  throw
}
`)
	if !private {
		b.WriteString("Invoke-Native 'icacls.exe' @($dst, '/reset') | Out-Null\n")
	}
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
