package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/asn1"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"
)

// The stamp the tests build with: CI builds from an exported tree, without
// git.
var testSource = Source{
	Version: "v0.0.0-20261130101112-0123456789ab",
	Commit:  "0123456789abcdef0123456789abcdef01234567",
	Time:    testTime,
}

// KrewModule is krew itself, run with go run to install the plugin.
const KrewModule = "sigs.k8s.io/krew/cmd/krew@v0.4.3"

// MaxBinarySize is the largest linux/amd64 binary a release may ship.
const MaxBinarySize = 64 << 20

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// unpack returns the members of a release archive.
func unpack(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[f.Name] = b
		}
		return out
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = b
	}
}

// writeExe writes an archive's binary to dir, executable.
func writeExe(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkBinaryFormat checks that data is an executable for p: its format
// and machine, statically linked and stripped.
func checkBinaryFormat(t *testing.T, p Platform, data []byte) {
	t.Helper()
	r := bytes.NewReader(data)
	switch p.OS {
	case "linux":
		f, err := elf.NewFile(r)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Arch]
		if f.Machine != want {
			t.Errorf("%s: ELF machine %v", p, f.Machine)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked", p)
			}
		}
		if f.Section(".symtab") != nil || f.Section(".debug_info") != nil {
			t.Errorf("%s: not stripped", p)
		}
	case "darwin":
		f, err := macho.NewFile(r)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[p.Arch]
		if f.Cpu != want {
			t.Errorf("%s: Mach-O CPU %v", p, f.Cpu)
		}
	case "windows":
		f, err := pe.NewFile(r)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
			t.Errorf("%s: PE machine %#x", p, f.Machine)
		}
	}
	bi, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: build information: %v", p, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["-trimpath"] != "true" || settings["CGO_ENABLED"] != "0" || settings["GOOS"] != p.OS || settings["GOARCH"] != p.Arch || settings["vcs.revision"] != "" {
		t.Errorf("%s: build settings %v", p, settings)
	}
}

// run runs a command and returns its stdout, failing the test on a
// non-zero exit unless the exit code is want.
func run(t *testing.T, cmd *exec.Cmd, want int) (stdout string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	if code != want {
		t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", cmd.Args, code, want, out.String(), errb.String())
	}
	return out.String()
}

// TestRelease builds a release of this tree for every platform, then
// linux/amd64 and a signed windows/amd64 again, and checks every file:
// archives, binaries (format, size, stamp), SHA256SUMS, SBOMs, the krew
// manifest (installed by krew itself), the image, reproducibility, the
// Authenticode signature, and the Windows binary under wine against the
// Linux one.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hybridctl for five platforms and runs it under wine: not with -short")
	}
	w := newWine(t)
	ctx := context.Background()
	root := moduleRoot(t)
	src := testSource
	src.Dir = root
	tmp := t.TempDir()
	dirA := filepath.Join(tmp, "a")
	var progress bytes.Buffer
	filesA, err := Build(ctx, Options{Source: src, OutDir: dirA, Platforms: Platforms(), Progress: &progress,
		DownloadURL: "https://downloads.example.com/hybridctl/" + src.Version})
	if err != nil {
		t.Fatalf("release: %v\n%s", err, progress.String())
	}
	bins := map[string][]byte{}
	var names []string
	for _, f := range filesA {
		names = append(names, f.Name)
	}
	wantNames := []string{ChecksumsName, KrewManifestName, ImageName(src.Version)}
	for _, p := range Platforms() {
		wantNames = append(wantNames, ArchiveName(src.Version, p), SBOMName(src.Version, p))
	}
	slices.Sort(wantNames)
	if strings.Join(names, " ") != strings.Join(wantNames, " ") {
		t.Errorf("release files:\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(wantNames, "\n"))
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("the build left more than its directory beside it: %v", ents)
	}

	t.Run("archives", func(t *testing.T) {
		license, _ := os.ReadFile(filepath.Join(root, "LICENSE"))
		readme, _ := os.ReadFile(filepath.Join(root, "README.md"))
		for _, p := range Platforms() {
			m := unpack(t, filepath.Join(dirA, ArchiveName(src.Version, p)))
			if len(m) != 3 || !bytes.Equal(m["LICENSE"], license) || !bytes.Equal(m["README.md"], readme) || m[p.Exe()] == nil {
				t.Errorf("%s archive holds %d files", p, len(m))
			}
			checkBinaryFormat(t, p, m[p.Exe()])
			bins[p.String()] = m[p.Exe()]
			t.Logf("%s: binary %.1f MiB", p, float64(len(m[p.Exe()]))/(1<<20))
			for _, leak := range []string{root, goEnv(t, "GOROOT"), goEnv(t, "GOMODCACHE")} {
				if leak != "" && bytes.Contains(m[p.Exe()], []byte(leak)) {
					t.Errorf("%s: the binary holds the build machine's path %s", p, leak)
				}
			}
		}
		if n := len(bins["linux/amd64"]); n > MaxBinarySize {
			t.Errorf("linux/amd64 binary: %d bytes (%.1f MiB), over the %d MiB limit", n, float64(n)/(1<<20), MaxBinarySize>>20)
		}
	})

	linux := writeExe(t, t.TempDir(), "hybridctl", bins["linux/amd64"])
	t.Run("version", func(t *testing.T) {
		var v struct {
			Version, Commit, BuildDate, Platform string
			Targets                              map[string]string
		}
		out := run(t, exec.Command(linux, "version", "-o", "json"), 0)
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if v.Version != src.Version || v.Commit != src.Commit || v.BuildDate != "2026-11-30T10:11:12Z" || v.Platform != "linux/amd64" || v.Targets["kubernetes"] == "" {
			t.Errorf("version -o json: %s", out)
		}
		if line := run(t, exec.Command(linux, "--version"), 0); line != "hybridctl "+src.Version+" (commit 0123456789ab, built 2026-11-30T10:11:12Z, "+runtime.Version()+" linux/amd64)\n" {
			t.Errorf("--version: %q", line)
		}
	})

	t.Run("checksums", func(t *testing.T) {
		cmd := exec.Command("sha256sum", "-c", "--strict", ChecksumsName)
		cmd.Dir = dirA
		out := run(t, cmd, 0)
		if strings.Count(out, ": OK\n") != len(filesA)-1 {
			t.Errorf("sha256sum -c checked %d files, want %d:\n%s", strings.Count(out, ": OK\n"), len(filesA)-1, out)
		}
	})

	t.Run("sbom", func(t *testing.T) {
		for _, p := range Platforms() {
			data, err := os.ReadFile(filepath.Join(dirA, SBOMName(src.Version, p)))
			if err != nil {
				t.Fatal(err)
			}
			var bom struct {
				BOMFormat, SpecVersion, SerialNumber string
				Metadata                             struct {
					Timestamp string
					Component struct{ Name, Version, Purl string }
				}
				Components []struct{ Name, Version, Purl string }
			}
			if err := json.Unmarshal(data, &bom); err != nil {
				t.Fatal(err)
			}
			if bom.BOMFormat != "CycloneDX" || bom.SerialNumber != "urn:uuid:"+sbomSerial(bins[p.String()]) || bom.Metadata.Timestamp != "" ||
				bom.Metadata.Component.Version != src.Version || !strings.Contains(bom.Metadata.Component.Purl, "goos="+p.OS) {
				t.Errorf("%s SBOM header: %s %s %s %+v", p, bom.BOMFormat, bom.SerialNumber, bom.Metadata.Timestamp, bom.Metadata.Component)
			}
			have := map[string]string{}
			for _, c := range bom.Components {
				have[c.Name] = c.Version
			}
			bi, err := buildinfo.Read(bytes.NewReader(bins[p.String()]))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range bi.Deps {
				if d.Replace != nil {
					d = d.Replace
				}
				if have[d.Path] != d.Version {
					t.Errorf("%s SBOM: module %s at %q, the binary has %s", p, d.Path, have[d.Path], d.Version)
				}
			}
			if have["std"] != bi.GoVersion {
				t.Errorf("%s SBOM: standard library %q, the binary was built by %s", p, have["std"], bi.GoVersion)
			}
		}
	})

	t.Run("krew", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(dirA, KrewManifestName))
		if err != nil {
			t.Fatal(err)
		}
		var p krewPlugin
		if err := yaml.UnmarshalStrict(data, &p); err != nil {
			t.Fatal(err)
		}
		sums := map[string]string{}
		for _, f := range filesA {
			sums[f.Name] = f.SHA256
		}
		if len(p.Spec.Platforms) != len(Platforms()) {
			t.Fatalf("krew platforms: %d", len(p.Spec.Platforms))
		}
		for i, pl := range p.Spec.Platforms {
			name := ArchiveName(src.Version, Platforms()[i])
			if pl.URI != "https://downloads.example.com/hybridctl/"+src.Version+"/"+name || pl.Sha256 != sums[name] {
				t.Errorf("krew platform %d: %s %s; want %s with its sha256", i, pl.URI, pl.Sha256, name)
			}
		}
		// krew itself installs the plugin from the manifest and the
		// linux/amd64 archive (checking the sha256 and its rules), and
		// kubectl-hybridctl runs.
		krewRoot := t.TempDir()
		cmd := exec.Command("go", "run", KrewModule, "install", "--manifest="+filepath.Join(dirA, KrewManifestName),
			"--archive="+filepath.Join(dirA, ArchiveName(src.Version, Platform{"linux", "amd64"})))
		cmd.Env = append(os.Environ(), "KREW_ROOT="+krewRoot, "KREW_NO_UPGRADE_CHECK=1", "GOFLAGS=", "KREW_OS=linux", "KREW_ARCH=amd64")
		run(t, cmd, 0)
		out := run(t, exec.Command(filepath.Join(krewRoot, "bin", "kubectl-hybridctl"), "version", "-o", "json"), 0)
		if !strings.Contains(out, `"version": "`+src.Version+`"`) {
			t.Errorf("kubectl-hybridctl version: %s", out)
		}
	})

	t.Run("image", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(dirA, ImageName(src.Version)))
		if err != nil {
			t.Fatal(err)
		}
		idx := checkImageLayout(t, data, src, DefaultRepository, map[string][]byte{"linux/amd64": bins["linux/amd64"], "linux/arm64": bins["linux/arm64"]})
		pushAndPull(t, idx, []v1.Platform{{OS: "linux", Architecture: "arm64", Variant: "v8"}})
	})

	// Again: linux/amd64, and windows/amd64 signed with a throwaway
	// certificate and a timestamp from a local RFC 3161 server.
	signer, verify := testSigner(t)
	dirB := filepath.Join(t.TempDir(), "b")
	if _, err := Build(ctx, Options{Source: src, OutDir: dirB, Platforms: []Platform{{"linux", "amd64"}, {"windows", "amd64"}}, Signer: signer,
		DownloadURL: "https://downloads.example.com/hybridctl/" + src.Version}); err != nil {
		t.Fatalf("second release: %v", err)
	}

	t.Run("reproducible", func(t *testing.T) {
		for _, name := range []string{ArchiveName(src.Version, Platform{"linux", "amd64"}), SBOMName(src.Version, Platform{"linux", "amd64"})} {
			a, errA := os.ReadFile(filepath.Join(dirA, name))
			b, errB := os.ReadFile(filepath.Join(dirB, name))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("%s differs between two builds of the same commit (%v, %v)", name, errA, errB)
			}
		}
	})

	signedExe := unpack(t, filepath.Join(dirB, ArchiveName(src.Version, Platform{"windows", "amd64"})))["hybridctl.exe"]
	t.Run("signed", func(t *testing.T) {
		exe := writeExe(t, t.TempDir(), "hybridctl.exe", signedExe)
		out := verify(exe)
		if !strings.Contains(out, "Signature verification: ok") || !strings.Contains(out, "Timestamp") {
			t.Errorf("osslsigncode verify:\n%s", out)
		}
		// Without its signature it is the unsigned build's binary, byte
		// for byte but for the PE checksum, which osslsigncode fills in
		// (Go's linker leaves it 0).
		bare := exe + ".bare.exe"
		run(t, exec.Command(signer.Tool, "remove-signature", "-in", exe, "-out", bare), 0)
		got, err := os.ReadFile(bare)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(withoutPEChecksum(t, got), withoutPEChecksum(t, bins["windows/amd64"])) {
			t.Error("the signed executable without its signature differs from the unsigned one")
		}
		// The unsigned one has no signature to verify.
		unsigned := writeExe(t, t.TempDir(), "u.exe", bins["windows/amd64"])
		if out, err := exec.Command(signer.Tool, "verify", "-in", unsigned).CombinedOutput(); err == nil {
			t.Errorf("an unsigned executable verified:\n%s", out)
		}
	})

	t.Run("wine", func(t *testing.T) {
		testUnderWine(t, w, linux, signedExe)
	})
}

// testSigner returns a Signer with a throwaway code-signing certificate
// and a local RFC 3161 timestamp server (openssl ts behind a loopback
// HTTP server), and a function that verifies a signed file against them.
func testSigner(t *testing.T) (*Signer, func(string) string) {
	t.Helper()
	tool := lookFor("osslsigncode")
	openssl := lookFor("openssl")
	if tool == "" || openssl == "" {
		t.Fatalf("osslsigncode %q, openssl %q: hack/install-deps.sh installs them", tool, openssl)
	}
	dir := t.TempDir()
	now := time.Now()
	newKey := func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	writePEM := func(name, typ string, der []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert := func(cn string, serial int64, key *rsa.PrivateKey, usage []x509.ExtKeyUsage, ca bool, parent *x509.Certificate, parentKey *rsa.PrivateKey) (*x509.Certificate, []byte) {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"hybridctl test"}},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), ExtKeyUsage: usage, BasicConstraintsValid: true, IsCA: ca,
			KeyUsage: x509.KeyUsageDigitalSignature}
		if ca {
			tmpl.KeyUsage |= x509.KeyUsageCertSign
		}
		if slices.Contains(usage, x509.ExtKeyUsageTimeStamping) {
			// RFC 3161: a timestamping certificate's extended key usage is
			// critical (openssl ts refuses one that is not).
			tmpl.ExtKeyUsage = nil
			tmpl.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true,
				Value: must(asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}}))}}
		}
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c, der
	}
	caKey := newKey()
	ca, caDER := cert("hybridctl test CA", 1, caKey, nil, true, nil, nil)
	caFile := writePEM("ca.pem", "CERTIFICATE", caDER, 0o644)
	signKey := newKey()
	_, signDER := cert("hybridctl test code signing", 2, signKey, []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, false, ca, caKey)
	certFile := writePEM("sign.pem", "CERTIFICATE", signDER, 0o644)
	keyFile := writePEM("sign.key", "PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(signKey)), 0o600)
	tsaKey := newKey()
	_, tsaDER := cert("hybridctl test TSA", 3, tsaKey, []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping}, false, ca, caKey)
	tsaCert := writePEM("tsa.pem", "CERTIFICATE", tsaDER, 0o644)
	tsaKeyFile := writePEM("tsa.key", "PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(tsaKey)), 0o600)
	conf := filepath.Join(dir, "tsa.cnf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`[tsa]
default_tsa = tsa_config
[tsa_config]
dir = %s
serial = %s/tsaserial
signer_cert = %s
certs = %s
signer_key = %s
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256, sha384, sha512
accuracy = secs:1
ess_cert_id_alg = sha256
`, dir, dir, tsaCert, caFile, tsaKeyFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tsaserial"), []byte("01\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	requests := 0
	tsa := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		requests++
		q, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || r.Header.Get("Content-Type") != "application/timestamp-query" {
			http.Error(rw, "want an RFC 3161 query", http.StatusBadRequest)
			return
		}
		qf := filepath.Join(dir, fmt.Sprintf("q%d.tsq", requests))
		if err := os.WriteFile(qf, q, 0o644); err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		var errb bytes.Buffer
		cmd := exec.Command(openssl, "ts", "-reply", "-config", conf, "-queryfile", qf)
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("openssl ts -reply: %v\n%s", err, errb.String())
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		rw.Header().Set("Content-Type", "application/timestamp-reply")
		_, _ = rw.Write(out)
	}))
	t.Cleanup(tsa.Close)
	s, err := SignerFromEnv(func(k string) string {
		return map[string]string{EnvSignKey: keyFile, EnvSignCert: certFile, EnvSignTimestampURL: tsa.URL, EnvSignTool: tool}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(exe string) string {
		t.Helper()
		if requests == 0 {
			t.Error("the timestamp server was never asked")
		}
		return run(t, exec.Command(tool, "verify", "-in", exe, "-CAfile", caFile, "-TSA-CAfile", caFile), 0)
	}
	return s, verify
}

// goEnv is go env NAME.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// withoutPEChecksum is a copy of a PE file with its optional header's
// CheckSum field zeroed.
func withoutPEChecksum(t *testing.T, exe []byte) []byte {
	t.Helper()
	if len(exe) < 0x40 {
		t.Fatal("not a PE file")
	}
	off := int(binary.LittleEndian.Uint32(exe[0x3c:])) + 4 + 20 + 64 // PE signature, COFF header, then CheckSum
	if off+4 > len(exe) {
		t.Fatal("not a PE file")
	}
	out := bytes.Clone(exe)
	clear(out[off : off+4])
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
