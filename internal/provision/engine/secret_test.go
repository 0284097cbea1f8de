package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	plantedToken   = "k8sz9q.p3k9m2x7c5v0b4n1"
	plantedCertKey = "9f2c1d7e4b8a6035e1f0c3b2a9d8e7f6c5b4a39281706f5e4d3c2b1a0f9e8d7c"
)

var plantedKey = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIKzw1wHU1ZTEmx0Tk0TTzZ6lQwCPyiBhQkbRFgkqwCcX
-----END PRIVATE KEY-----`

// secretParts are the byte strings that must never appear.
func secretParts() []string {
	return []string{plantedToken, "p3k9m2x7c5v0b4n1", plantedCertKey, "MC4CAQAwBQYDK2VwBCIEIKzw1wHU1ZTEmx0Tk0TTzZ6lQwCPyiBhQkbRFgkqwCcX"}
}

func TestSecretNeverFormats(t *testing.T) {
	s := NewSecret(plantedToken)
	if s.IsZero() || !NewSecret("").IsZero() || !(Secret{}).IsZero() || s.Reveal() != plantedToken {
		t.Errorf("IsZero/Reveal: a set secret is not zero, an empty one is")
	}
	type joinConfig struct {
		Token    Secret `json:"token"`
		Endpoint string `json:"endpoint"`
	}
	jc := joinConfig{Token: s, Endpoint: "k8s-lab-api.example.com:6443"}
	js, err := json.Marshal(jc)
	if err != nil {
		t.Fatal(err)
	}
	outs := []string{
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x %X %d", s, s, s, s, s, s, s, s),
		fmt.Sprintf("%v %+v %#v", jc, jc, jc), fmt.Sprintf("%v", &jc), string(js),
		fmt.Errorf("join failed with token %v", s).Error(), s.String(),
	}
	for _, o := range outs {
		if strings.Contains(o, "p3k9m2x7c5v0b4n1") {
			t.Errorf("secret leaked: %s", o)
		}
		if !strings.Contains(o, "redacted") {
			t.Errorf("no redaction marker: %s", o)
		}
	}
	if s.Reveal() != plantedToken {
		t.Error("Reveal lost the value")
	}
}

func TestRedactor(t *testing.T) {
	var r Redactor
	r.AddBootstrapToken(NewSecret(plantedToken))
	r.Add(NewSecret(plantedKey), NewSecret("short"))
	in := "kubeadm join --token " + plantedToken + "\ntoken-secret: p3k9m2x7c5v0b4n1\n" + plantedKey + "\nkey line alone MC4CAQAwBQYDK2VwBCIEIKzw1wHU1ZTEmx0Tk0TTzZ6lQwCPyiBhQkbRFgkqwCcX\nshort stays"
	out := r.Redact(in)
	for _, p := range secretParts()[:2] {
		if strings.Contains(out, p) {
			t.Errorf("%q survived:\n%s", p, out)
		}
	}
	if strings.Contains(out, "MC4CAQ") {
		t.Errorf("key material survived:\n%s", out)
	}
	if !strings.Contains(out, "short stays") {
		t.Error("values shorter than the minimum must not be redacted")
	}
	var nilR *Redactor
	if nilR.Redact("x") != "x" {
		t.Error("nil redactor")
	}
}

// leakyPhase is a careless phase: its dry-run, its skip reason, its error
// and its command output all contain the secrets. The engine must scrub them
// all; the state file must never hold them.
type leakyPhase struct{ name string }

func (p *leakyPhase) Describe() Descriptor { return Descriptor{Name: p.name} }
func (p *leakyPhase) Run(_ context.Context, h Host) error {
	if h.Name == "k8s-lab-win-1" {
		return fmt.Errorf("kubeadm join --token %s --certificate-key %s: %w", plantedToken, plantedCertKey,
			&fakeCmdErr{out: "[discovery] using token " + plantedToken + "\n" + plantedKey + "\n"})
	}
	return nil
}
func (p *leakyPhase) DryRun(_ context.Context, h Host) ([]string, error) {
	return []string{"kubeadm join k8s-lab-api.example.com:6443 --token " + plantedToken,
		"write C:\\k\\join.yaml (0600):\n  token: " + plantedToken + "\n" + plantedKey}, nil
}
func (p *leakyPhase) ShouldRun(_ context.Context, h Host) (bool, string, error) {
	if h.Name == "k8s-lab-node-2" {
		return false, "already joined with token " + plantedToken, nil
	}
	return true, "", nil
}

func TestSecretsNeverInOutputOrState(t *testing.T) {
	var red Redactor
	red.AddBootstrapToken(NewSecret(plantedToken))
	red.Add(NewSecret(plantedCertKey), NewSecret(plantedKey))
	statePath := filepath.Join(t.TempDir(), "state.json")
	phases := []Phase{&leakyPhase{name: "join"}, &leakyPhase{name: "after-join"}}
	var all bytes.Buffer
	for _, mode := range []Options{
		{DryRun: true}, {DryRun: true, Offline: true}, {}, {}, // the second real run resumes
	} {
		var text, js bytes.Buffer
		mode.Cluster, mode.StatePath, mode.Redactor = "lab", statePath, &red
		tr, jr := NewTextReporter(&text, Descriptors(phases), labHosts()), NewJSONReporter(&js)
		mode.Reporter = ReporterFunc(func(e Event) { tr.Report(e); jr.Report(e) })
		e, err := New(phases, labHosts(), mode)
		if err != nil {
			t.Fatal(err)
		}
		runErr := e.Run(context.Background())
		all.Write(text.Bytes())
		all.Write(js.Bytes())
		if !mode.DryRun && runErr == nil {
			t.Fatal("the Windows join should fail")
		}
	}
	state, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	all.Write(state)
	for _, p := range secretParts() {
		if i := bytes.Index(all.Bytes(), []byte(p)); i >= 0 {
			lo := max(0, i-80)
			t.Errorf("secret %q found in output/state: ...%s...", p, all.Bytes()[lo:min(all.Len(), i+len(p)+20)])
		}
	}
	// The test must be able to fail: the secrets were really emitted and
	// scrubbed, not silently dropped.
	for _, want := range []string{"--token " + Redacted, "| [discovery] using token " + Redacted, "already joined with token " + Redacted, `"output":"[discovery] using token \u003credacted\u003e`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("expected %q in the output", want)
		}
	}
	if bytes.Contains(state, []byte(Redacted)) || bytes.Contains(state, []byte("token")) {
		t.Errorf("the state file holds free text:\n%s", state)
	}
}

func TestPhaseErrorsUnwrapToCause(t *testing.T) {
	cause := errors.New("boom")
	err := errors.Join(&PhaseError{Phase: "a", Host: "h", Err: fmt.Errorf("x: %w", cause)})
	if !errors.Is(err, cause) || len(PhaseErrors(err)) != 1 {
		t.Error("PhaseError does not unwrap")
	}
}

// chattyPhase fails with output a node printed: secrets hybridctl never
// knew (a cloud key in an environment dump, a registry password in a
// header), found by their form.
type chattyPhase struct{}

const chattyOutput = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n" +
	"> Authorization: Basic cmVnaXN0cnk6UmVnUGFzczE=\n" +
	`{"clientSecret": "Zx8~Q.client-secret-1"}` + "\n" +
	"172.21.41.0/26 via 172.21.41.1 dev vxlan.calico onlink\n"

func (chattyPhase) Describe() Descriptor { return Descriptor{Name: "chatty", Targets: Nodes} }
func (chattyPhase) Run(context.Context, Host) error {
	return fmt.Errorf("pulling with password=hunter2hunter2: %w", &fakeCmdErr{out: chattyOutput})
}

// TestHostOutputRedactedByPattern: a failed step's output and error are
// redacted by redact's patterns in the text and JSON progress, with or
// without a Redactor; what a diagnosis needs stays.
func TestHostOutputRedactedByPattern(t *testing.T) {
	for _, red := range []*Redactor{nil, {}} {
		var text, js bytes.Buffer
		tr, jr := NewTextReporter(&text, []Descriptor{chattyPhase{}.Describe()}, labHosts()), NewJSONReporter(&js)
		e, err := New([]Phase{chattyPhase{}}, labHosts()[:1], Options{Cluster: "lab", Redactor: red,
			Reporter: ReporterFunc(func(e Event) { tr.Report(e); jr.Report(e) })})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err == nil {
			t.Fatal("the step should fail")
		}
		all := text.String() + js.String()
		for _, s := range []string{"wJalrXUtnFEMI", "cmVnaXN0cnk6UmVnUGFzczE=", "Zx8~Q.client-secret-1", "hunter2hunter2"} {
			if strings.Contains(all, s) {
				t.Errorf("redactor %v: %q reached the progress:\n%s", red, s, all)
			}
		}
		if !strings.Contains(text.String(), "| 172.21.41.0/26 via 172.21.41.1 dev vxlan.calico onlink") || !strings.Contains(all, "AWS_SECRET_ACCESS_KEY=<redacted>") {
			t.Errorf("redactor %v: the output is not there, redacted:\n%s", red, all)
		}
	}
}
