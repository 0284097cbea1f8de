package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files")

type cliRun struct {
	code     int
	out, err string
}

func runCLI(t *testing.T, stdin string, args ...string) cliRun {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return cliRun{code, out.String(), errOut.String()}
}

// chartsDir is the vendored Helm chart renders (testdata/third_party).
func chartsDir(t *testing.T) string {
	t.Helper()
	d, err := testenv.ThirdPartyDir(t.Context(), "prometheus-community-helm-charts")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type jsonReport struct {
	Findings []struct {
		Check    string `json:"check"`
		Name     string `json:"name"`
		Severity string `json:"severity"`
		Object   struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Namespace  string `json:"namespace"`
			Name       string `json:"name"`
		} `json:"object"`
		Message  string `json:"message"`
		Fix      string `json:"fix"`
		File     string `json:"file"`
		Line     int    `json:"line"`
		Template string `json:"template"`
	} `json:"findings"`
	Skipped []struct {
		Check  string `json:"check"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	Notes       []string `json:"notes"`
	Diagnostics []struct {
		Severity string `json:"severity"`
		File     string `json:"file"`
		Line     int    `json:"line"`
		Message  string `json:"message"`
		Fix      string `json:"fix"`
	} `json:"diagnostics"`
	Summary map[string]int `json:"summary"`
}

func decodeReport(t *testing.T, s string) jsonReport {
	t.Helper()
	var r jsonReport
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("decode -o json: %v\n%s", err, s)
	}
	return r
}

// TestLintCharts: the real rendered charts; no false positives, and the
// guide's node-exporter mistake found from the pod template alone.
func TestLintCharts(t *testing.T) {
	charts := chartsDir(t)
	for _, c := range []struct {
		file string
		want []string // check + object name, errors and warnings only
	}{
		{"node-exporter-default.yaml", nil},
		{"windows-exporter-default.yaml", nil},
		{"kube-prometheus-stack-windows.yaml", nil},
		{"node-exporter-arch-only.yaml", []string{"HC101 ne-prometheus-node-exporter"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			r := runCLI(t, "", "lint", filepath.Join(charts, c.file), "-o", "json", "--fail-on", "warning")
			rep := decodeReport(t, r.out)
			var got []string
			for _, f := range rep.Findings {
				if f.Severity != "info" {
					got = append(got, f.Check+" "+f.Object.Name)
				}
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("findings = %q, want %q", got, c.want)
			}
			wantCode := ExitOK
			if len(c.want) > 0 {
				wantCode = ExitProblem
			}
			if r.code != wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", r.code, wantCode, r.err)
			}
			if len(rep.Skipped) != 0 {
				t.Errorf("lint skipped checks: %+v", rep.Skipped)
			}
		})
	}
	// Through stdin, as helm template | hybridctl lint -.
	b, err := os.ReadFile(filepath.Join(charts, "node-exporter-arch-only.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, string(b), "lint", "-", "-o", "json")
	rep := decodeReport(t, r.out)
	if r.code != ExitProblem || len(rep.Findings) != 1 || rep.Findings[0].File != "<stdin>" || rep.Findings[0].Line != 46 {
		t.Fatalf("stdin: exit %d, findings %+v", r.code, rep.Findings)
	}
}

// TestLintLab: the guide's lab as manifests gives nothing at warning or
// above.
func TestLintLab(t *testing.T) {
	r := runCLI(t, "", "lint", filepath.Join("..", "..", "testdata", "clusters", "lab"), "-o", "json", "--fail-on", "warning")
	rep := decodeReport(t, r.out)
	if r.code != ExitOK || rep.Summary["errors"] != 0 || rep.Summary["warnings"] != 0 || rep.Summary["objects"] < 50 {
		t.Fatalf("exit %d, summary %v\n%s", r.code, rep.Summary, r.err)
	}
}

// TestLintGolden pins every output format on a small fixture.
func TestLintGolden(t *testing.T) {
	for _, format := range []string{"table", "json", "sarif", "junit"} {
		t.Run(format, func(t *testing.T) {
			r := runCLI(t, "", "lint", "testdata/lint-sample.yaml", "-o", format)
			if r.code != ExitProblem {
				t.Fatalf("exit %d, want 1; stderr %s", r.code, r.err)
			}
			golden := filepath.Join("testdata", "golden", "lint-sample."+format)
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(r.out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if r.out != string(want) {
				t.Fatalf("output differs from %s (run with -update to accept):\n%s", golden, r.out)
			}
			switch format {
			case "sarif":
				var log struct {
					Version string `json:"version"`
					Runs    []struct {
						Results []struct {
							RuleID    string `json:"ruleId"`
							Locations []struct {
								PhysicalLocation struct {
									ArtifactLocation struct{ URI string }    `json:"artifactLocation"`
									Region           struct{ StartLine int } `json:"region"`
								} `json:"physicalLocation"`
							} `json:"locations"`
						} `json:"results"`
					} `json:"runs"`
				}
				if err := json.Unmarshal([]byte(r.out), &log); err != nil {
					t.Fatal(err)
				}
				if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) == 0 {
					t.Fatalf("sarif: %+v", log)
				}
				loc := log.Runs[0].Results[0].Locations[0].PhysicalLocation
				if loc.ArtifactLocation.URI != "testdata/lint-sample.yaml" || loc.Region.StartLine != 3 {
					t.Fatalf("first result location = %+v, want testdata/lint-sample.yaml:3", loc)
				}
			case "junit":
				var s struct {
					Tests    int `xml:"tests,attr"`
					Failures int `xml:"failures,attr"`
				}
				if err := xml.Unmarshal([]byte(strings.TrimPrefix(r.out, xml.Header)), &s); err != nil {
					t.Fatal(err)
				}
				if s.Failures != 4 || s.Tests < 30 {
					t.Fatalf("junit: %d tests, %d failures", s.Tests, s.Failures)
				}
			}
		})
	}
}

func TestLintFlags(t *testing.T) {
	sample := "testdata/lint-sample.yaml"
	cases := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"only info and below fail", []string{"--fail-on", "none"}, ExitOK, "HC101"},
		{"skip by name", []string{"--skip", "daemonset-os-selector,HC103,HC104,windows-taint-not-tolerated"}, ExitOK, "0 errors,"},
		{"only by id", []string{"--checks", "HC104"}, ExitOK, "1 warning,"},
		{"only by id, fail on warning", []string{"--checks", "HC104", "--fail-on", "warning"}, ExitProblem, "HC104"},
		{"unknown check", []string{"--checks", "HC999"}, ExitUsage, ""},
		{"bad format", []string{"-o", "yaml"}, ExitUsage, ""},
		{"bad fail-on", []string{"--fail-on", "sometimes"}, ExitUsage, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"lint", sample}, c.args...)...)
			if r.code != c.code || !strings.Contains(r.out, c.contains) {
				t.Fatalf("exit %d (want %d), out:\n%s\nerr: %s", r.code, c.code, r.out, r.err)
			}
		})
	}
	if r := runCLI(t, "", "lint"); r.code != ExitUsage {
		t.Errorf("lint without paths: exit %d", r.code)
	}
	if r := runCLI(t, "", "lint", "testdata/does-not-exist"); r.code != ExitIncomplete {
		t.Errorf("missing path: exit %d", r.code)
	}
	if r := runCLI(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: [\n", "lint", "-"); r.code != ExitProblem || !strings.Contains(r.out, "<stdin>:7 error") {
		t.Errorf("unparsable manifest: exit %d, out %q", r.code, r.out)
	}
}

func TestLintConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ignore.yaml")
	if err := os.WriteFile(cfg, []byte("ignore:\n- check: daemonset-os-selector\n  namespace: monitoring\n  name: agent\n  reason: tested\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "lint", "testdata/lint-sample.yaml", "--config", cfg, "-o", "json")
	rep := decodeReport(t, r.out)
	for _, f := range rep.Findings {
		if f.Check == "HC101" {
			t.Fatalf("HC101 not suppressed by the config file: %+v", f)
		}
	}
	if rep.Summary["suppressed"] != 2 {
		t.Fatalf("suppressed = %d, want 2 (the config file and the annotation)", rep.Summary["suppressed"])
	}
	if err := os.WriteFile(cfg, []byte("ignore:\n- check: no-such-check\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "lint", "testdata/lint-sample.yaml", "--config", cfg); r.code != ExitUsage {
		t.Fatalf("unknown check in config: exit %d", r.code)
	}
}

func TestDoctorExplain(t *testing.T) {
	for _, ref := range []string{"HC101", "hc101", "daemonset-os-selector"} {
		r := runCLI(t, "", "doctor", "--explain", ref)
		if r.code != 0 || !strings.HasPrefix(r.out, "HC101 daemonset-os-selector (error)") || !strings.Contains(r.out, "Guide: Taint, RuntimeClass and Linux DaemonSets") {
			t.Fatalf("explain %s: exit %d\n%s", ref, r.code, r.out)
		}
	}
	if r := runCLI(t, "", "doctor", "--explain", "nope"); r.code != ExitUsage {
		t.Fatalf("explain unknown: exit %d", r.code)
	}
}

func TestDoctorUnreachable(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	// Port 9 on loopback: nothing listens.
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "doctor", "--kubeconfig", kc, "--request-timeout", "5s")
	if r.code != ExitIncomplete || !strings.Contains(r.err, "127.0.0.1:9") {
		t.Fatalf("exit %d, stderr %q", r.code, r.err)
	}
}

// TestLintSpecTaints: with --spec the Windows taints come from the plan and
// the finding says so instead of "assumed".
func TestLintSpecTaints(t *testing.T) {
	r := runCLI(t, "", "lint", "testdata/lint-sample.yaml", "--spec", "../../examples/lab.yaml", "--checks", "HC112")
	if r.code != ExitProblem || !strings.Contains(r.out, "os=windows:NoSchedule (from lab.yaml)") || strings.Contains(r.out, "assumed") {
		t.Fatalf("exit %d, out:\n%s\nerr: %s", r.code, r.out, r.err)
	}
	r = runCLI(t, "", "lint", "testdata/lint-sample.yaml", "--checks", "HC112")
	if r.code != ExitProblem || !strings.Contains(r.out, "assumed: the guide's taint") {
		t.Fatalf("without --spec: exit %d, out:\n%s", r.code, r.out)
	}
	if r := runCLI(t, "", "lint", "testdata/lint-sample.yaml", "--spec", "testdata/no-such-spec.yaml"); r.code == ExitOK || r.code == ExitProblem {
		t.Fatalf("missing spec: exit %d", r.code)
	}
}

// TestLintSpecBuilds: with --spec a workload pinned to a Windows build the
// spec's nodes do not have is reported (HC114) naming the plan's build;
// without it, a pin to a release hybridctl knows is not.
func TestLintSpecBuilds(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "iis.yaml")
	if err := os.WriteFile(p, []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: iis-2022, namespace: web}
spec:
  template:
    spec:
      os: {name: windows}
      nodeSelector: {kubernetes.io/os: windows, node.kubernetes.io/windows-build: "10.0.20348"}
      tolerations: [{key: os, operator: Equal, value: windows, effect: NoSchedule}]
      containers: [{name: iis, image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "lint", p, "--spec", "../../examples/lab.yaml", "-o", "json")
	rep := decodeReport(t, r.out)
	if r.code != ExitProblem || len(rep.Findings) != 1 || rep.Findings[0].Check != "HC114" ||
		!strings.Contains(rep.Findings[0].Message, "lab.yaml plans 10.0.26100") || !strings.Contains(rep.Findings[0].Fix, "runtimeClassName: windows-2025") {
		t.Fatalf("exit %d, findings %+v\n%s", r.code, rep.Findings, r.err)
	}
	if r := runCLI(t, "", "lint", p, "-o", "json"); r.code != ExitOK {
		t.Fatalf("without --spec: exit %d\n%s", r.code, r.out)
	}
}
