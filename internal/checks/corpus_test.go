package checks_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/finding"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// The real-world corpus: public manifests from other projects, vendored
// unchanged under testdata/third_party/corpus/<project>/ with a SOURCE
// file, and every workload labelled by hand (expected.tsv, the development
// set; heldout.tsv, labelled before lint first ran on it) for a cluster like
// the guide's: Windows nodes tainted os=windows:NoSchedule, Windows Server
// 2025, amd64. flag = an expert would report the workload.

// label is one row of expected.tsv or heldout.tsv.
type label struct {
	set, file, kind, namespace, name string
	flag                             bool
	reason                           string
}

func (l label) key() string { return l.file + "\t" + l.kind + "\t" + l.namespace + "\t" + l.name }

func corpusDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "testdata", "third_party", "corpus")
}

func readLabels(t *testing.T, dir string) []label {
	t.Helper()
	var out []label
	seen := map[string]bool{}
	for _, set := range []string{"expected", "heldout"} {
		path := filepath.Join(dir, set+".tsv")
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		n := 0
		for sc.Scan() {
			n++
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			c := strings.Split(line, "\t")
			if len(c) != 6 || (c[4] != "flag" && c[4] != "clean") || c[5] == "" {
				t.Fatalf("%s:%d: want file, kind, namespace, name, flag|clean, reason (tab-separated): %q", path, n, line)
			}
			l := label{set: set, file: c[0], kind: c[1], namespace: c[2], name: c[3], flag: c[4] == "flag", reason: c[5]}
			if seen[l.key()] {
				t.Fatalf("%s:%d: %s labelled twice", path, n, l.key())
			}
			seen[l.key()] = true
			out = append(out, l)
		}
		f.Close()
	}
	return out
}

// corpusFiles returns the manifests, "project/file", sorted.
func corpusFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	projects, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, p.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if ext := filepath.Ext(f.Name()); ext == ".yaml" || ext == ".yml" || ext == ".json" {
				out = append(out, p.Name()+"/"+f.Name())
			}
		}
	}
	sort.Strings(out)
	return out
}

// corpusResult is what lint says about one workload: the errors and
// warnings on it (info does not flag), and every finding for the report.
type corpusResult struct {
	flagged  bool
	findings []checks.Finding
}

// lintCorpus lints every corpus file on its own, as a user points lint at
// one manifest, and returns the findings by workload key, plus the
// workloads each file holds.
func lintCorpus(t *testing.T, dir string) (map[string]*corpusResult, map[string]bool) {
	t.Helper()
	res := map[string]*corpusResult{}
	workloads := map[string]bool{}
	for _, file := range corpusFiles(t, dir) {
		s, err := snapshot.LoadFiles(context.Background(), []string{filepath.Join(dir, file)}, nil)
		if err != nil {
			t.Fatalf("lint %s: %v", file, err)
		}
		for _, w := range s.Workloads {
			workloads[file+"\t"+w.Kind+"\t"+w.Meta.Namespace+"\t"+w.Meta.Name] = true
		}
		r, err := checks.Run(s, checks.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range r.Findings {
			k := file + "\t" + f.Object.Kind + "\t" + f.Object.Namespace + "\t" + f.Object.Name
			cr := res[k]
			if cr == nil {
				cr = &corpusResult{}
				res[k] = cr
			}
			cr.findings = append(cr.findings, f)
			cr.flagged = cr.flagged || f.Severity != finding.Info
		}
	}
	return res, workloads
}

type confusion struct{ tp, fp, fn, tn int }

func (c confusion) precision() float64 {
	if c.tp+c.fp == 0 {
		return 1
	}
	return float64(c.tp) / float64(c.tp+c.fp)
}

func (c confusion) recall() float64 {
	if c.tp+c.fn == 0 {
		return 1
	}
	return float64(c.tp) / float64(c.tp+c.fn)
}

func (c confusion) String() string { return c.table("lint") }

// table is the confusion matrix with who (lint, doctor) flagging.
func (c confusion) table(who string) string {
	return fmt.Sprintf("              expert flag  expert clean\n  %-6s flags %11d  %12d\n  %-6s silent%11d  %12d\n  precision %.1f%% (%d/%d), recall %.1f%% (%d/%d), %d workloads",
		who, c.tp, c.fp, who, c.fn, c.tn, 100*c.precision(), c.tp, c.tp+c.fp, 100*c.recall(), c.tp, c.tp+c.fn, c.tp+c.fp+c.fn+c.tn)
}

// TestCorpus lints the real-world corpus and compares with the hand labels:
// it prints the confusion matrix of each set and every disagreement, and
// fails below 95% precision or 90% recall over the whole corpus, on a
// labelled workload lint does not read, or on a workload nobody labelled.
func TestCorpus(t *testing.T) {
	dir := corpusDir(t)
	labels := readLabels(t, dir)
	res, workloads := lintCorpus(t, dir)
	labelled := map[string]bool{}
	byset := map[string]*confusion{"expected": {}, "heldout": {}}
	var total confusion
	var disagree []string
	for _, l := range labels {
		labelled[l.key()] = true
		if !workloads[l.key()] {
			t.Errorf("%s: labelled %s/%s (%s) is not among the workloads lint read from the file", l.file, l.kind, l.name, l.set)
		}
		r := res[l.key()]
		got := r != nil && r.flagged
		c := byset[l.set]
		switch {
		case got && l.flag:
			c.tp++
			total.tp++
		case got && !l.flag:
			c.fp++
			total.fp++
		case !got && l.flag:
			c.fn++
			total.fn++
		default:
			c.tn++
			total.tn++
		}
		if got != l.flag {
			what := "false alarm"
			if l.flag {
				what = "missed"
			}
			s := fmt.Sprintf("  %s [%s] %s %s %s: expert says %q", what, l.set, l.file, l.kind, qualified(l.namespace, l.name), l.reason)
			if r != nil {
				for _, f := range r.findings {
					s += fmt.Sprintf("\n      %s %s: %s", f.Check, f.Severity, f.Message)
				}
			}
			disagree = append(disagree, s)
		}
	}
	var unlabelled []string
	for k := range workloads {
		if !labelled[k] {
			unlabelled = append(unlabelled, strings.ReplaceAll(k, "\t", " "))
		}
	}
	sort.Strings(unlabelled)
	for _, u := range unlabelled {
		t.Errorf("workload without a label: %s", u)
	}
	t.Logf("development set (expected.tsv):\n%s", byset["expected"])
	t.Logf("held-out set (heldout.tsv):\n%s", byset["heldout"])
	t.Logf("whole corpus:\n%s", total)
	if len(disagree) > 0 {
		t.Logf("disagreements:\n%s", strings.Join(disagree, "\n"))
	}
	if total.precision() < 0.95 || total.recall() < 0.90 {
		t.Errorf("precision %.1f%%, recall %.1f%%: want at least 95%% and 90%%", 100*total.precision(), 100*total.recall())
	}
	if total.tp+total.fn < 20 || total.tn+total.fp < 20 {
		t.Errorf("the corpus needs at least 20 workloads of each label, has %d flag and %d clean", total.tp+total.fn, total.tn+total.fp)
	}
}

// TestCorpusProvenance: every vendored file is listed in its project's
// SOURCE with the sha256 it has, every project carries its licence text, and
// the corpus stays small.
func TestCorpusProvenance(t *testing.T) {
	dir := corpusDir(t)
	projects, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	nproj := 0
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		nproj++
		pdir := filepath.Join(dir, p.Name())
		src, err := os.ReadFile(filepath.Join(pdir, "SOURCE"))
		if err != nil {
			t.Errorf("%s: %v", p.Name(), err)
			continue
		}
		if lic, err := os.Stat(filepath.Join(pdir, "LICENSE")); err != nil || lic.Size() < 200 {
			t.Errorf("%s: no licence text (LICENSE): %v", p.Name(), err)
		}
		listed := map[string]string{}
		hasRepo := false
		for _, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(line, "repository: https://github.com/") {
				hasRepo = true
			}
			c := strings.Split(line, "\t")
			if len(c) == 4 && !strings.HasPrefix(line, "#") {
				if len(c[1]) != 40 {
					t.Errorf("%s/SOURCE: %s: commit %q is not a full commit id", p.Name(), c[0], c[1])
				}
				listed[c[0]] = c[3]
			}
		}
		if !hasRepo || !strings.Contains(string(src), "licence: ") {
			t.Errorf("%s/SOURCE names no repository or licence", p.Name())
		}
		files, _ := os.ReadDir(pdir)
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(pdir, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			size += int64(len(b))
			if f.Name() == "SOURCE" || f.Name() == "LICENSE" {
				continue
			}
			sum := sha256.Sum256(b)
			want, ok := listed[f.Name()]
			switch {
			case !ok:
				t.Errorf("%s/%s is not listed in SOURCE", p.Name(), f.Name())
			case want != hex.EncodeToString(sum[:]):
				t.Errorf("%s/%s: sha256 %x, SOURCE says %s (the file was changed)", p.Name(), f.Name(), sum, want)
			}
			delete(listed, f.Name())
		}
		for name := range listed {
			t.Errorf("%s/SOURCE lists %s, which is not there", p.Name(), name)
		}
	}
	if nproj < 12 {
		t.Errorf("%d projects, want at least 12", nproj)
	}
	if size > 1<<20 {
		t.Errorf("the corpus holds %d bytes: keep it well under 2 MB", size)
	}
	t.Logf("%d projects, %d manifests, %d bytes", nproj, len(corpusFiles(t, dir)), size)
}

// corpusStats lints the corpus for docs/checks.md.
func corpusStats(t *testing.T) *checks.CorpusStats {
	t.Helper()
	dir := corpusDir(t)
	res, workloads := lintCorpus(t, dir)
	st := &checks.CorpusStats{Manifests: len(corpusFiles(t, dir)), Workloads: len(workloads), Hits: map[string][]string{}}
	projects := map[string]bool{}
	for _, f := range corpusFiles(t, dir) {
		projects[strings.SplitN(f, "/", 2)[0]] = true
	}
	st.Projects = len(projects)
	keys := make([]string, 0, len(res))
	for k := range res {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := strings.Split(k, "\t")
		for _, f := range res[k].findings {
			st.Hits[f.Check] = append(st.Hits[f.Check], c[0]+" "+c[1]+" "+qualified(c[2], c[3]))
		}
	}
	return st
}
