package pwshtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// specs are every valid spec of the repository: examples/ and the spec
// package's valid fixtures.
func specs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, pattern := range []string{"../../examples/*.yaml", "../*/testdata/valid/*.yaml"} {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[strings.TrimPrefix(filepath.ToSlash(p), "../")] = b
		}
	}
	if len(out) < 3 {
		t.Fatalf("found %d specs", len(out))
	}
	return out
}

// TestRenderedScriptsParse renders every spec (the lab for each Windows
// build), with and without join secrets, and parses every .ps1: zero
// syntax errors, zero rule findings.
func TestRenderedScriptsParse(t *testing.T) {
	secrets := render.Options{Token: "abcdef.0123456789abcdef", CACertHash: "sha256:" + strings.Repeat("0f", 32)}
	var scripts []Script
	for name, data := range specs(t) {
		variants := map[string][]byte{name: data}
		if strings.Contains(string(data), `build: "10.0.26100"`) {
			for _, b := range []string{"17763", "20348"} {
				variants[name+"@"+b] = []byte(strings.ReplaceAll(string(data), `build: "10.0.26100"`, `build: "10.0.`+b+`"`))
			}
		}
		for vname, v := range variants {
			r := spec.Parse(vname, v)
			if err := r.Err(); err != nil {
				t.Fatalf("%s: %v", vname, err)
			}
			p, err := plan.Derive(r.Cluster, r.Diagnostics)
			if err != nil {
				t.Fatalf("%s: %v", vname, err)
			}
			for oname, o := range map[string]render.Options{"": {}, "+secrets": secrets} {
				files, err := render.Render(p, o)
				if err != nil {
					t.Fatalf("%s%s: %v", vname, oname, err)
				}
				for _, f := range files {
					if strings.HasSuffix(f.Path, ".ps1") {
						scripts = append(scripts, Script{Name: vname + oname + ": " + f.Path, Text: string(f.Data)})
					}
				}
			}
		}
	}
	slices.SortFunc(scripts, func(a, b Script) int { return strings.Compare(a.Name, b.Name) })
	// Two secrets variants of at least the lab in three builds.
	if len(scripts) < 6 {
		t.Fatalf("only %d .ps1 files rendered", len(scripts))
	}
	t0 := time.Now()
	Check(t, scripts...)
	t.Logf("%d rendered scripts parsed in %s", len(scripts), time.Since(t0).Round(time.Millisecond))
}

// TestTransportCommandsParse sends the transport's own Windows commands
// (the clock sample and fact gathering of preflight, uploads with and without the ACL, the
// boot id) to the in-process SSH server and parses what arrives, decoded
// from the -EncodedCommand on the server side.
func TestTransportCommandsParse(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	kh := srv.KnownHostsFile(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, transport.Config{Host: "win", OS: engine.Windows, Address: srv.Addr, User: "u", KeyFiles: []string{key.Path}, KnownHosts: &transport.KnownHosts{Path: kh}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	win := engine.Host{Name: "win", Role: engine.RoleWorker, OS: engine.Windows}
	_, _ = hostfacts.GatherHost(ctx, c, win, "k8s-lab-api.example.com")
	_, _ = hostfacts.GatherHost(ctx, c, win, "192.168.10.23")
	if err := c.Upload(ctx, `C:\k\join.yaml`, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Upload(ctx, `C:\k\patches\kubelet.yaml`, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BootID(ctx); err != nil {
		t.Fatal(err)
	}
	scripts := Decoded(t, srv.Commands())
	// Each gathering: the clock command, then the facts script.
	if len(scripts) != 7 {
		t.Fatalf("%d commands arrived, want 7", len(scripts))
	}
	if !strings.Contains(scripts[0].Text, "[DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds()") || !strings.Contains(scripts[2].Text, "[DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds()") {
		t.Errorf("the clock is not sampled before each gathering:\n%s\n%s", scripts[0].Text, scripts[2].Text)
	}
	if !strings.Contains(scripts[3].Text, "s resolve; '192.168.10.23'") {
		t.Errorf("an address as the API endpoint is not looked up in DNS:\n%s", scripts[3].Text)
	}
	if !strings.Contains(scripts[4].Text, "[System.IO.FileMode]::CreateNew") || strings.Contains(scripts[4].Text, "icacls") {
		t.Errorf("the 0600 upload creates its file with the restricted ACL, and changes no ACL after:\n%s", scripts[4].Text)
	}
	if !strings.Contains(scripts[5].Text, "Invoke-Native 'icacls.exe' @($dst, '/reset')") {
		t.Errorf("the 0644 upload gives the inherited permissions through Invoke-Native:\n%s", scripts[5].Text)
	}
	Check(t, scripts...)
}

// A broken script is reported with its name, line and column.
func TestBrokenScriptCaught(t *testing.T) {
	good := "$ErrorActionPreference = 'Stop'\nWrite-Host 'a'\n"
	broken := good + "if ($x {\n    Write-Host 'b'\n}\n"
	got := Run(t, Script{Name: "good.ps1", Text: good}, Script{Name: "nodes/w/prepare.ps1", Text: broken})
	if len(got) == 0 || !strings.HasPrefix(got[0], "nodes/w/prepare.ps1:3:") || !strings.Contains(got[0], "syntax error") {
		t.Fatalf("want a syntax error at nodes/w/prepare.ps1:3, got %q", got)
	}
	for _, g := range got {
		if strings.HasPrefix(g, "good.ps1") {
			t.Errorf("finding in the good script: %s", g)
		}
	}
}

// Each rule fires on its near-miss and not on the fixed text.
func TestRules(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"native under Stop", "$ErrorActionPreference = 'Stop'\ntar.exe -xvf a.tgz\n", "2:1: native-under-stop: tar.exe"},
		{"native under Stop with 2>&1", "$ErrorActionPreference = 'Stop'\nw32tm /resync 2>&1 | Out-Null\n", "2:1: native-under-stop: w32tm"},
		{"fixed: through Invoke-Native", "$ErrorActionPreference = 'Stop'\nInvoke-Native 'w32tm.exe' @('/resync') | Out-Null\n", ""},
		{"fixed: in a function that sets Continue", "$ErrorActionPreference = 'Stop'\nfunction f {\n    $ErrorActionPreference = 'Continue'\n    tar.exe -xvf a.tgz\n}\n", ""},
		{"near miss: no Stop", "tar.exe -xvf a.tgz\n", ""},
		{"near miss: a block sets SilentlyContinue", "$ErrorActionPreference = 'Stop'\n& {\n$ErrorActionPreference = 'SilentlyContinue'\nw32tm /query /status\n}\n", ""},
		{"an earlier function's Continue is its own", "$ErrorActionPreference = 'Stop'\nfunction Invoke-Native {\n    $ErrorActionPreference = 'Continue'\n}\nfunction g {\n    tar.exe -xvf a.tgz\n}\n", "6:5: native-under-stop: tar.exe"},
		{"an earlier block's Continue is its own", "$ErrorActionPreference = 'Stop'\n1 | ForEach-Object { $ErrorActionPreference = 'Continue' }\nsc.exe delete x\n", "3:1: native-under-stop: sc.exe"},
		{"Stop again after Continue", "$ErrorActionPreference = 'Continue'\n$ErrorActionPreference = 'Stop'\ncurl.exe -o a b\n", "3:1: native-under-stop: curl.exe"},
		{"near miss: a cmdlet", "$ErrorActionPreference = 'Stop'\nGet-Service containerd\n", ""},
		{"null property under strict mode", "Set-StrictMode -Version 3.0\n$a = (Resolve-DnsName $h -ErrorAction SilentlyContinue).IPAddress\n", "2:6: strict-null-property"},
		{"fixed: kept in a variable", "Set-StrictMode -Version 3.0\n$r = Resolve-DnsName $h -ErrorAction SilentlyContinue\nif ($null -ne $r) { $a = $r.IPAddress }\n", ""},
		{"near miss: no strict mode", "$a = (Resolve-DnsName $h -ErrorAction SilentlyContinue).IPAddress\n", ""},
		{"near miss: a lookup that throws", "Set-StrictMode -Version 3.0\n$a = (Get-Service containerd).Status\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Run(t, Script{Name: "x.ps1", Text: tc.text})
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("want nothing, got %q", got)
			case tc.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], "x.ps1:"+tc.want)):
				t.Errorf("want x.ps1:%s..., got %q", tc.want, got)
			}
		})
	}
}
