package procedure

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
)

const testToken = "k7q2zd.9xw4m1v8c3b6n0p5"

func testCA(t *testing.T) (pemData []byte, wantHash string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	// Independently of CACertHash: marshal the public key ourselves.
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), "sha256:" + hex.EncodeToString(sum[:])
}

func joinFiles() Artifacts {
	join := "token: " + render.TokenPlaceholder + "\ncaCertHashes:\n  - " + render.CACertHashPlaceholder + "\n"
	return ArtifactsOf([]render.File{
		{Path: "nodes/k8s-lab-node-1/join.yaml", Data: []byte(join)},
		{Path: "nodes/k8s-lab-win-1/join.yaml", Data: []byte(join)},
		{Path: "nodes/k8s-lab-win-1/patches/kubeletconfiguration.yaml", Data: []byte("maxPods: 60\n")},
	})
}

func TestCACertHash(t *testing.T) {
	ca, want := testCA(t)
	got, err := CACertHash(ca)
	if err != nil || got != want {
		t.Errorf("CACertHash = %q, %v; want %q", got, err, want)
	}
	if _, err := CACertHash([]byte("not pem")); err == nil {
		t.Error("garbage accepted")
	}
}

func joinFixture(t *testing.T, windows bool, joinErr error) (*joinPhase, *fakeConn, *fakeConn, string, *engine.Redactor) {
	ca, hash := testCA(t)
	cp := newFake(func(script string, _ int) (*transport.Result, error) {
		switch {
		case strings.HasPrefix(script, "kubeadm token create --ttl 1h"):
			return out(testToken + "\n")
		case script == "cat /etc/kubernetes/pki/ca.crt":
			return out(string(ca))
		}
		return nil, errors.New("unexpected on the control plane: " + script)
	})
	node := newFake(func(script string, _ int) (*transport.Result, error) {
		if strings.Contains(script, "join --config") {
			if joinErr != nil {
				return nil, joinErr
			}
		}
		return out("")
	})
	red := &engine.Redactor{}
	p := &joinPhase{title: "join", windows: windows, files: joinFiles(), redactor: red,
		hosts: []engine.Host{cp1, node1, win1},
		connect: func(_ context.Context, h string) (hostConn, error) {
			if h == cp1.Name {
				return cp, nil
			}
			return node, nil
		}}
	return p, cp, node, hash, red
}

func TestJoinLinux(t *testing.T) {
	p, cp, node, hash, red := joinFixture(t, false, nil)
	if err := p.Run(context.Background(), node1); err != nil {
		t.Fatal(err)
	}
	got := string(node.data[linuxJoinFile])
	if node.uploads[linuxJoinFile] != 0o600 || !strings.Contains(got, "token: "+testToken) || !strings.Contains(got, "- "+hash) || strings.Contains(got, "__HYBRIDCTL") {
		t.Errorf("join.yaml (mode %v):\n%s", node.uploads[linuxJoinFile], got)
	}
	if want := []string{"kubeadm join --config " + linuxJoinFile, "rm -f " + linuxJoinFile}; strings.Join(node.runs, "|") != strings.Join(want, "|") {
		t.Errorf("node runs %q", node.runs)
	}
	if !strings.Contains(cp.runs[0], "--description 'hybridctl join k8s-lab-node-1'") {
		t.Errorf("token create: %q", cp.runs[0])
	}
	for _, r := range append(cp.runs, node.runs...) {
		if strings.Contains(r, testToken) {
			t.Errorf("token on a command line: %q", r)
		}
	}
	if red.Redact("token "+testToken+" secret 9xw4m1v8c3b6n0p5") != "token <redacted> secret <redacted>" {
		t.Error("the redactor does not know the token")
	}
}

func TestJoinFailureStillRemovesTheFile(t *testing.T) {
	joinErr := &transport.CommandError{Host: "k8s-lab-node-1", Command: "kubeadm join", ExitCode: 1, Output: []byte("[preflight] couldn't validate the identity of the API Server")}
	p, _, node, _, _ := joinFixture(t, false, joinErr)
	err := p.Run(context.Background(), node1)
	if !errors.Is(err, joinErr) {
		t.Fatalf("want the join error, got %v", err)
	}
	if last := node.runs[len(node.runs)-1]; last != "rm -f "+linuxJoinFile {
		t.Errorf("join.yaml not removed after a failure: %q", node.runs)
	}
}

func TestJoinWindows(t *testing.T) {
	p, _, node, _, _ := joinFixture(t, true, nil)
	if err := p.Run(context.Background(), win1); err != nil {
		t.Fatal(err)
	}
	if node.uploads[windowsJoinFile] != 0o600 || string(node.data[`C:\k\patches\kubeletconfiguration.yaml`]) != "maxPods: 60\n" {
		t.Errorf("uploads %v", node.uploads)
	}
	// C:\k goes first on PATH in the same script as the join: kubeadm's
	// preflight runs kubelet --version through PATH.
	want := []string{"$env:Path = 'C:\\k;' + $env:Path\n" + `Invoke-Native 'C:\k\kubeadm.exe' @('join', '--config', 'C:\k\join.yaml')`, `Remove-Item -Force -ErrorAction SilentlyContinue 'C:\k\join.yaml'`}
	if strings.Join(node.runs, "|") != strings.Join(want, "|") {
		t.Errorf("runs %q", node.runs)
	}
}

func TestJoinSkipsJoinedNode(t *testing.T) {
	p, _, _, _, _ := joinFixture(t, false, nil)
	run, why, err := p.ShouldRun(context.Background(), node1)
	if err != nil || run || !strings.Contains(why, "kubelet.conf exists") {
		t.Errorf("joined node: run=%v why=%q err=%v", run, why, err)
	}
}
