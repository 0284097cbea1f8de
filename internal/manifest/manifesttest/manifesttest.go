// Package manifesttest gives tests the repository's own YAML files: the
// vendored public manifests and chart renders, the guide's documents and
// every fixture, as real-world input for the parsers' tests.
package manifesttest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// File is one YAML file of the repository.
type File struct {
	// Path is relative to the repository's root, with forward slashes.
	Path string
	Data []byte
	// Public marks a file vendored from another project (under
	// testdata/third_party/): what tools write, not hand-written fixtures.
	Public bool
}

// YAMLFiles returns every *.yaml and *.yml file of the repository (the
// module the test runs in), sorted by path.
func YAMLFiles(t testing.TB) []File {
	t.Helper()
	root := moduleRoot(t)
	var files []File
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		files = append(files, File{Path: rel, Data: data, Public: strings.Contains(rel, "testdata/third_party/")})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no YAML files under %s", root)
	}
	return files
}

// moduleRoot is the nearest directory above the test's own that holds a
// go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// KubectlPod is a pod as kubectl get -o yaml and the benchmark's
// generator write it, with a few of YAML's quoting styles and comments.
const KubectlPod = `apiVersion: v1
kind: Pod
metadata:
  name: app-669-5d8f7b-0
  namespace: team-19
  labels: {app: app-669, pod-template-hash: 5d8f7b}
  annotations:
    note: 'it''s "quoted"'
    escaped: "tab\there \u00e9 \\ /"
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: app-669-5d8f7b, controller: true, blockOwnerDeletion: true, uid: "00000000-0000-0000-0000-000000000000"}]
spec:
  nodeName: node-390
  os: {name: linux}
  nodeSelector: {kubernetes.io/os: linux}
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  tolerations:
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  - key: os
    operator: Equal   # a comment
    value: windows
  containers:
  - name: app
    image: registry.example.com/app-669:1.0.0
    command: ["sh", '-c', echo hi]
    args:
    - --port=8080
    - -v
    env: [{name: BACKEND, value: "http://backend.svc.cluster.local"}]
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi, cpu: "1"}}
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    ports:
      - containerPort: 8080
        protocol: TCP
  volumes:
  - name: kube-api-access
    projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 3607}}, {configMap: {name: kube-root-ca.crt}}]}
  - name: empty
    emptyDir: {}
status:
  phase: Running
  hostIP: 10.0.0.7
  startTime: 2026-11-06T20:00:00Z
  conditions:
  - {type: Ready, status: "True"}
  containerStatuses: [{name: app, ready: true, restartCount: 0, state: {running: {startedAt: "2026-11-06T20:00:00Z"}}}]
`
