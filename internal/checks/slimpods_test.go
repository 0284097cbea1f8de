package checks_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// TestSlimPodsSameFindings: doctor and lint keep only the pods a check can
// read (snapshot.SlimPods); on every check's fixtures, every finding (check,
// object, message, fix) must be the same as with every pod kept. The
// fixtures of the checks that read pods (HC103, HC104, HC203, HC207,
// HC402) have pods on Windows and Linux nodes, ready and not, with and
// without a k8s-app label, so a pod dropped that a check reads changes a
// finding here.
func TestSlimPodsSameFindings(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "HC*", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	extra := filepath.Join("testdata", "slimpods", "extra.yaml")
	dropped, kept := 0, 0
	for _, path := range paths {
		h := readHeader(t, path)
		all, err := checks.Run(loadAll(t, h, path, extra), checks.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := loadAll(t, h, path, extra)
		n := len(s.Pods)
		s.SlimPods()
		s.DropUnreadPods()
		if s.PodsDropped != n-len(s.Pods) {
			t.Fatalf("%s: PodsDropped %d, but %d of %d pods left", path, s.PodsDropped, len(s.Pods), n)
		}
		var names []string
		for _, p := range s.Pods {
			if strings.HasPrefix(p.Name, "slim-") {
				names = append(names, p.Name)
			}
		}
		// The extra pods: ready on Linux, on a missing node: dropped.
		if got := strings.Join(names, " "); got != "slim-labelled slim-not-ready slim-on-windows" {
			t.Fatalf("%s: kept of the extra pods: %s", path, got)
		}
		dropped += s.PodsDropped
		kept += len(s.Pods)
		slim, err := checks.Run(s, checks.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := findings(all), findings(slim); a != b {
			t.Errorf("%s: %d of %d pods kept, findings differ:\nall pods:\n%s\nslim:\n%s", path, len(s.Pods), n, a, b)
		}
	}
	if dropped == 0 || kept == 0 {
		t.Fatalf("the fixtures exercise nothing: %d pods dropped, %d kept", dropped, kept)
	}
	t.Logf("%d pods dropped, %d kept over %d fixtures", dropped, kept, len(paths))
}

// loadAll is load on several files, keeping every pod.
func loadAll(t *testing.T, h header, paths ...string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.FileOptions{KeepAllPods: true}.Load(context.Background(), paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := load(t, paths[0], h)
	s.Live, s.Listed, s.ServerVersion = live.Live, live.Listed, live.ServerVersion
	return s
}

func findings(res *checks.Result) string {
	var b strings.Builder
	for _, f := range res.Findings {
		fmt.Fprintf(&b, "%s %s %s/%s: %s | %s\n", f.Check, f.Object.Kind, f.Object.Namespace, f.Object.Name, f.Message, f.Fix)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(&b, "skipped %v\n", s)
	}
	return b.String()
}
