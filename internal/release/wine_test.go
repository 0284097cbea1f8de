package release

import (
	"bytes"
	"context"
	"debug/pe"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// forwarderDLL is a minimal PE32+ DLL named dllName whose one export,
// export, forwards to target ("dll.Function"). The test's wine (Debian
// bookworm's 8.0) has no bcryptprimitives.dll, whose ProcessPrng every Go
// program since Go 1.22 loads at start on Windows 10 and later; it does
// have advapi32's SystemFunction036 (RtlGenRandom), which takes the same
// (buffer, length) and returns non-zero on success. Real Windows has the
// DLL: nothing of this is shipped.
func forwarderDLL(dllName, export, target string) []byte {
	const (
		fileAlign = 0x200
		sectAlign = 0x1000
		sectRVA   = 0x1000
	)
	le := binary.LittleEndian
	// .rdata: the export directory (40 bytes), its three one-entry
	// arrays, then the names; the function's RVA points inside the
	// directory, which makes it a forwarder string.
	sec := make([]byte, 40+4+4+2)
	str := func(s string) uint32 {
		off := len(sec)
		sec = append(append(sec, s...), 0)
		return uint32(sectRVA + off)
	}
	dllNameRVA, exportRVA, targetRVA := str(dllName), str(export), str(target)
	le.PutUint32(sec[12:], dllNameRVA)
	le.PutUint32(sec[16:], 1) // ordinal base
	le.PutUint32(sec[20:], 1) // functions
	le.PutUint32(sec[24:], 1) // names
	le.PutUint32(sec[28:], sectRVA+40)
	le.PutUint32(sec[32:], sectRVA+44)
	le.PutUint32(sec[36:], sectRVA+48)
	le.PutUint32(sec[40:], targetRVA)
	le.PutUint32(sec[44:], exportRVA)
	raw := make([]byte, (len(sec)+fileAlign-1)/fileAlign*fileAlign)
	copy(raw, sec)

	var h bytes.Buffer
	w := func(vs ...any) {
		for _, v := range vs {
			_ = binary.Write(&h, le, v)
		}
	}
	dos := make([]byte, 64)
	copy(dos, "MZ")
	le.PutUint32(dos[0x3c:], 64)
	h.Write(dos)
	h.WriteString("PE\x00\x00")
	// COFF header: AMD64, one section, optional header of 240 bytes,
	// EXECUTABLE_IMAGE | LARGE_ADDRESS_AWARE | DLL.
	w(uint16(0x8664), uint16(1), uint32(0), uint32(0), uint32(0), uint16(240), uint16(0x2022))
	// Optional header (PE32+): no code, no entry point.
	w(uint16(0x20b), uint8(14), uint8(0), uint32(0), uint32(len(raw)), uint32(0), uint32(0), uint32(sectRVA))
	w(uint64(0x180000000), uint32(sectAlign), uint32(fileAlign))
	w(uint16(6), uint16(0), uint16(0), uint16(0), uint16(6), uint16(0), uint32(0))
	w(uint32(sectRVA+(len(raw)+sectAlign-1)/sectAlign*sectAlign), uint32(fileAlign), uint32(0))
	w(uint16(3), uint16(0x0100)) // console subsystem, NX compatible
	w(uint64(0x100000), uint64(0x1000), uint64(0x100000), uint64(0x1000), uint32(0), uint32(16))
	w(uint32(sectRVA), uint32(len(sec))) // the export table
	for range 15 {
		w(uint64(0))
	}
	name := [8]byte{}
	copy(name[:], ".rdata")
	h.Write(name[:])
	w(uint32(len(sec)), uint32(sectRVA), uint32(len(raw)), uint32(fileAlign), uint32(0), uint32(0), uint16(0), uint16(0), uint32(0x40000040))
	hdr := make([]byte, fileAlign)
	copy(hdr, h.Bytes())
	return append(hdr, raw...)
}

// wine runs Windows programs in its own prefix under a test's temporary
// directory.
type wine struct {
	t      *testing.T
	bin    string // wine64
	server string // wineserver
	prefix string
}

func lookFor(names ...string) string {
	for _, n := range names {
		if strings.Contains(n, "/") {
			if fi, err := os.Stat(n); err == nil && !fi.IsDir() {
				return n
			}
			continue
		}
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// newWine finds Debian's wine64 (hack/install-deps.sh installs it), makes a
// prefix and puts the bcryptprimitives.dll forwarder in its system32. A
// missing wine fails the test: it is not skipped.
func newWine(t *testing.T) *wine {
	t.Helper()
	w := &wine{t: t,
		bin:    lookFor("wine64", "/usr/lib/wine/wine64", "wine"),
		server: lookFor("wineserver", "/usr/lib/wine/wineserver64", "/usr/lib/wine/wineserver"),
		prefix: filepath.Join(t.TempDir(), "prefix"),
	}
	if w.bin == "" || w.server == "" {
		t.Fatalf("wine is not installed (wine64 %q, wineserver %q): hack/install-deps.sh installs it (Debian: apt-get install wine64)", w.bin, w.server)
	}
	t.Cleanup(func() {
		// wineserver writes the prefix's registry when it ends: end it
		// before the directory goes.
		for _, arg := range []string{"-k", "-w"} {
			cmd := exec.Command(w.server, arg)
			cmd.Env = w.env()
			_ = cmd.Run()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := w.cmd(ctx, t.TempDir(), "wineboot", "--init").CombinedOutput(); err != nil {
		t.Fatalf("wineboot --init: %v\n%s", err, out)
	}
	sys32 := filepath.Join(w.prefix, "drive_c", "windows", "system32")
	if err := os.WriteFile(filepath.Join(sys32, "bcryptprimitives.dll"), forwarderDLL("bcryptprimitives.dll", "ProcessPrng", "advapi32.SystemFunction036"), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *wine) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "DISPLAY" && k != "WAYLAND_DISPLAY" && !strings.HasPrefix(k, "WINE") {
			env = append(env, kv)
		}
	}
	// No display, no debug output, no Mono or Gecko installer.
	return append(env, "WINEPREFIX="+w.prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=", "WINEARCH=win64")
}

func (w *wine) cmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Dir = dir
	cmd.Env = w.env()
	cmd.Stdin = nil
	return cmd
}

// winPath is a Unix path as wine's Windows programs see it (drive Z: is /).
func winPath(p string) string {
	return `Z:` + strings.ReplaceAll(p, "/", `\`)
}

func TestForwarderDLL(t *testing.T) {
	dll := forwarderDLL("bcryptprimitives.dll", "ProcessPrng", "advapi32.SystemFunction036")
	f, err := pe.NewFile(bytes.NewReader(dll))
	if err != nil {
		t.Fatal(err)
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok || f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 || f.Characteristics&pe.IMAGE_FILE_DLL == 0 || len(f.Sections) != 1 {
		t.Fatalf("not an AMD64 DLL with one section: %+v", f.FileHeader)
	}
	exp := oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_EXPORT]
	data, err := f.Sections[0].Data()
	if err != nil {
		t.Fatal(err)
	}
	dir := data[exp.VirtualAddress-f.Sections[0].VirtualAddress:]
	str := func(rva uint32) string {
		b := data[rva-f.Sections[0].VirtualAddress:]
		return string(b[:bytes.IndexByte(b, 0)])
	}
	le := binary.LittleEndian
	fn := le.Uint32(data[le.Uint32(dir[28:])-f.Sections[0].VirtualAddress:])
	nm := le.Uint32(data[le.Uint32(dir[32:])-f.Sections[0].VirtualAddress:])
	if str(le.Uint32(dir[12:])) != "bcryptprimitives.dll" || str(nm) != "ProcessPrng" || str(fn) != "advapi32.SystemFunction036" {
		t.Errorf("exports: dll %q, name %q, function %q", str(le.Uint32(dir[12:])), str(nm), str(fn))
	}
	if fn < exp.VirtualAddress || fn >= exp.VirtualAddress+exp.Size {
		t.Error("the function's address is outside the export directory: not a forwarder")
	}
}

// tree reads every regular file under dir: slash-separated relative path
// to content with CRLF line ends made LF.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = strings.ReplaceAll(string(b), "\r\n", "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testUnderWine runs the release's hybridctl.exe under wine for version,
// init, plan, render and lint, with Windows paths, and compares what it
// prints and writes with the Linux binary's.
func testUnderWine(t *testing.T, w *wine, linux string, exeData []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	base := t.TempDir()
	lin, win := filepath.Join(base, "linux"), filepath.Join(base, "windows")
	for _, d := range []string{lin, win} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := writeExe(t, base, "hybridctl.exe", exeData)
	type result struct {
		code           int
		stdout, stderr string
	}
	exec1 := func(cmd *exec.Cmd) result {
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", cmd.Args, err)
		}
		return result{code, strings.ReplaceAll(out.String(), "\r\n", "\n"), strings.ReplaceAll(errb.String(), "\r\n", "\n")}
	}
	// each runs args on both, in their directories: {DIR} is the
	// directory, as a Unix path for Linux and a Windows path for Windows.
	each := func(compare bool, args ...string) (l, wr result) {
		t.Helper()
		la, wa := make([]string, len(args)), make([]string, len(args))
		for i, a := range args {
			la[i] = strings.ReplaceAll(a, "{DIR}", lin)
			wa[i] = strings.ReplaceAll(strings.ReplaceAll(a, "{DIR}", winPath(win)), "/", `\`)
		}
		lc := exec.CommandContext(ctx, linux, la...)
		lc.Dir = lin
		l = exec1(lc)
		wr = exec1(w.cmd(ctx, win, append([]string{exe}, wa...)...))
		// The Windows paths under the directory become the Linux ones
		// (also as JSON writes them): the rest must match.
		wr.stdout, wr.stderr = unWindows(wr.stdout, win, lin), unWindows(wr.stderr, win, lin)
		if l.code != wr.code {
			t.Errorf("%v: exit %d on Linux, %d on Windows\nWindows stderr: %s", args, l.code, wr.code, wr.stderr)
		}
		if compare && (l.stdout != wr.stdout || l.stderr != wr.stderr) {
			t.Errorf("%v: Linux and Windows print differently\nLinux:\n%s%s\nWindows:\n%s%s", args, l.stdout, l.stderr, wr.stdout, wr.stderr)
		}
		return l, wr
	}

	l, wr := each(false, "version", "-o", "json")
	var lv, wv map[string]any
	if err := json.Unmarshal([]byte(l.stdout), &lv); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(wr.stdout), &wv); err != nil {
		t.Fatalf("version on Windows: %v\n%s%s", err, wr.stdout, wr.stderr)
	}
	if wv["platform"] != "windows/amd64" {
		t.Errorf("version on Windows: platform %v", wv["platform"])
	}
	delete(lv, "platform")
	delete(wv, "platform")
	if fmt.Sprint(lv) != fmt.Sprint(wv) {
		t.Errorf("version: Linux %v, Windows %v", lv, wv)
	}

	each(true, "init", "-o", "{DIR}/cluster.yaml")
	each(true, "plan", "-f", "{DIR}/cluster.yaml")
	each(true, "plan", "-f", "{DIR}/cluster.yaml", "-o", "json")
	each(true, "render", "-f", "{DIR}/cluster.yaml", "-o", "{DIR}/out")
	each(true, "lint", "{DIR}/out/cluster")

	// Everything each wrote, by name and content.
	lt, wt := tree(t, lin), tree(t, win)
	if len(lt) < 10 {
		t.Fatalf("Linux wrote only %d files: %v", len(lt), lt)
	}
	for name, lc := range lt {
		wc, ok := wt[name]
		if !ok {
			t.Errorf("Windows did not write %s", name)
			continue
		}
		if strings.HasSuffix(name, "runbook.md") {
			// The runbook names the directory render wrote, in the path
			// form and shell quoting of the platform it ran on.
			lc, wc = outputDir.ReplaceAllString(lc, "--output-dir DIR"), outputDir.ReplaceAllString(wc, "--output-dir DIR")
		}
		if lc != wc {
			t.Errorf("%s differs between Linux and Windows:\nLinux:\n%s\nWindows:\n%s", name, firstDiff(lc, wc), firstDiff(wc, lc))
		}
	}
	for name := range wt {
		if _, ok := lt[name]; !ok {
			t.Errorf("Windows wrote %s, Linux did not", name)
		}
	}
}

// outputDir matches the --output-dir argument of render's command line in
// the runbook: a word, or a single-quoted string.
var outputDir = regexp.MustCompile(`--output-dir ('[^']*'|\S+)`)

// unWindows replaces, in s, the Windows paths under the Unix directory
// win (Z:\win\a\b, or Z:\\win\\a\\b in a JSON string) with the same
// paths under lin (lin/a/b).
func unWindows(s, win, lin string) string {
	plain := winPath(win)
	escaped := strings.ReplaceAll(plain, `\`, `\\`)
	s = regexp.MustCompile(regexp.QuoteMeta(escaped)+`(?:\\\\[\w.\-]+)*`).ReplaceAllStringFunc(s, func(m string) string {
		return lin + strings.ReplaceAll(m[len(escaped):], `\\`, "/")
	})
	return regexp.MustCompile(regexp.QuoteMeta(plain)+`(?:\\[\w.\-]+)*`).ReplaceAllStringFunc(s, func(m string) string {
		return lin + strings.ReplaceAll(m[len(plain):], `\`, "/")
	})
}

// firstDiff is a's text from a little before where it first differs from b.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	start := max(0, i-80)
	end := min(len(a), i+160)
	return a[start:end]
}

func TestUnWindows(t *testing.T) {
	win, lin := "/tmp/t/windows", "/tmp/t/linux"
	in := `wrote 3 files to Z:\tmp\t\windows\out; see Z:\tmp\t\windows\out\cluster\a.yaml:12: x` + "\n" +
		`{"file": "Z:\\tmp\\t\\windows\\cluster.yaml", "msg": "a \"quoted\" \\ b"}` + "\n" + `Z:\tmp\t\windowsX stays`
	want := `wrote 3 files to /tmp/t/linux/out; see /tmp/t/linux/out/cluster/a.yaml:12: x` + "\n" +
		`{"file": "/tmp/t/linux/cluster.yaml", "msg": "a \"quoted\" \\ b"}` + "\n" + `/tmp/t/linuxX stays`
	if got := unWindows(in, win, lin); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
