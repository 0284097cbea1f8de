package procedure

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}) }

// TestKubeconfigPhase imports the admin.conf of a real kube-apiserver (the
// test environment's, served by a fake control-plane connection) into a
// fresh kubeconfig, verifying it against the API.
func TestKubeconfigPhase(t *testing.T) {
	env := testenv.Get(t)
	admin, err := os.ReadFile(env.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	serve := func(conf []byte) func(context.Context, string) (hostConn, error) {
		return conn(newFake(func(script string, _ int) (*transport.Result, error) {
			if script == "cat /etc/kubernetes/admin.conf" {
				return out(string(conf))
			}
			return nil, errors.New("unexpected: " + script)
		}))
	}
	target := filepath.Join(t.TempDir(), "config")
	red := &engine.Redactor{}
	p := &kubeconfigPhase{target: &KubeconfigTarget{Store: &kubeconfig.Store{Path: target}, Name: "lab", VerifyTimeout: 20 * time.Second},
		hosts: []engine.Host{cp1, node1}, connect: serve(admin), redactor: red}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Run(ctx, engine.ClusterHost()); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(first, []byte("name: lab-admin")) || !bytes.Contains(first, []byte("name: lab\n")) {
		t.Errorf("imported kubeconfig:\n%s", first)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v", fi.Mode().Perm())
	}
	for _, l := range strings.Split(string(admin), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && k == "client-key-data" {
			if red.Redact(strings.TrimSpace(v)) != engine.Redacted {
				t.Error("the redactor does not know admin.conf's client key")
			}
		}
	}
	// Again: nothing changes.
	if err := p.Run(ctx, engine.ClusterHost()); err != nil {
		t.Fatalf("second import: %v", err)
	}
	if again, _ := os.ReadFile(target); !bytes.Equal(again, first) {
		t.Error("a second import changed the kubeconfig")
	}
	// Another identity under the same name is refused; the file stays.
	other := filepath.Join(t.TempDir(), "other.conf")
	ucfg, err := env.UserConfig("someone-else", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.WriteKubeconfig(other, ucfg); err != nil {
		t.Fatal(err)
	}
	otherConf, _ := os.ReadFile(other)
	p.connect = serve(otherConf)
	if err := p.Run(ctx, engine.ClusterHost()); err == nil {
		t.Error("a different admin.conf under the same name was accepted")
	}
	if again, _ := os.ReadFile(target); !bytes.Equal(again, first) {
		t.Error("a refused import changed the kubeconfig")
	}
}

// TestKubeconfigPhaseNeverRunsPlugins: an admin.conf from a compromised
// control plane whose user runs an exec plugin (or reads a local file)
// fails the phase; the plugin never runs, nothing is read and the
// kubeconfig is not written.
func TestKubeconfigPhaseNeverRunsPlugins(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "plugin-ran")
	script := filepath.Join(dir, "plugin.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch '"+marker+"'\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"x\"}}'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, user := range map[string]string{
		"exec":      "exec: {apiVersion: client.authentication.k8s.io/v1, command: " + script + ", interactiveMode: Never}",
		"tokenFile": "tokenFile: " + filepath.Join(dir, "token"),
	} {
		t.Run(name, func(t *testing.T) {
			conf := `apiVersion: v1
kind: Config
clusters: [{name: kubernetes, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: kubernetes-admin, user: {` + user + `}}]
contexts: [{name: kubernetes-admin@kubernetes, context: {cluster: kubernetes, user: kubernetes-admin}}]
current-context: kubernetes-admin@kubernetes
`
			target := filepath.Join(t.TempDir(), "config")
			p := &kubeconfigPhase{target: &KubeconfigTarget{Store: &kubeconfig.Store{Path: target}, Name: "lab", VerifyTimeout: 5 * time.Second},
				hosts: []engine.Host{cp1, node1}, connect: conn(newFake(func(script string, _ int) (*transport.Result, error) {
					return out(conf)
				}))}
			err := p.Run(context.Background(), engine.ClusterHost())
			if err == nil || !strings.Contains(err.Error(), "refus") {
				t.Fatalf("want a refusal, got %v", err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the phase ran the plugin")
			}
			if _, err := os.Stat(target); err == nil {
				t.Fatal("the phase wrote the kubeconfig")
			}
		})
	}
}
