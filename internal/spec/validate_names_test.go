package spec

import (
	"strings"
	"testing"
)

// TestNodeNameSuggestion: the suggestion for a node name that is not a DNS
// label, and none where no valid name is near.
func TestNodeNameSuggestion(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"K8S_Win_1", "k8s-win-1"},
		{"k8s-lab-node-1.", "k8s-lab-node-1"},
		{"-node--1-", "node-1"},
		{"Node 2", "node-2"},
		{"___", ""},
		{"k8s-lab-node-1", ""},        // already valid
		{strings.Repeat("A", 64), ""}, // too long either way
		{"ñandú", "and"},              // letters outside a-z dropped
	} {
		got, ok := NodeNameSuggestion(c.in)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("NodeNameSuggestion(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

// TestNodeNameMessage: S105 says the rule in words and suggests a name.
func TestNodeNameMessage(t *testing.T) {
	src := strings.Replace(mustRead(t, "../../examples/lab.yaml"), "name: k8s-lab-win-1", "name: K8S_Win_1", 1)
	r := Parse("cluster.yaml", []byte(src))
	var msgs []string
	for _, d := range r.Diagnostics {
		if d.Rule == "S105" {
			msgs = append(msgs, d.Message)
		}
	}
	want := `"K8S_Win_1" is not a valid node name: a node name has at most 63 characters, only lowercase letters, digits and '-', and starts and ends with a letter or digit (an RFC 1123 label: it becomes the Kubernetes Node name and the host name); did you mean "k8s-win-1"?`
	if len(msgs) != 1 || msgs[0] != want {
		t.Errorf("S105: %q\nwant %q", msgs, want)
	}
}

// TestAPIPortMessage: S503 reads as one sentence, for a port a program
// holds and for the NodePort range.
func TestAPIPortMessage(t *testing.T) {
	for port, want := range map[string]string{
		"30001": "port 30001 is in the NodePort range (30000-32767), so kube-proxy would send its traffic to NodePort Services instead of kube-apiserver; use 6443",
		"10250": "port 10250 is taken on the control-plane node by the kubelet API, so kube-apiserver cannot listen on it there; use 6443",
	} {
		src := strings.Replace(mustRead(t, "../../examples/lab.yaml"), "controlPlaneEndpoint: k8s-lab-api.example.com:6443", "controlPlaneEndpoint: k8s-lab-api.example.com:"+port, 1)
		r := Parse("cluster.yaml", []byte(src))
		var got []string
		for _, d := range r.Diagnostics {
			if d.Rule == "S503" {
				got = append(got, d.Message)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("S503: %q\nwant %q", got, want)
		}
	}
}
