// Package checks is the hybrid-cluster check catalogue: pure functions over
// a snapshot, in one ordered list (All), with their documentation in one
// embedded catalogue (catalogue.yaml). doctor and lint run the same checks;
// only the loader differs.
package checks

import (
	_ "embed"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/manifest"

	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/suggest"
)

// Doc is a check's catalogue entry.
type Doc struct {
	ID       string           `json:"id"`
	Name     string           `json:"name"`
	Severity finding.Severity `json:"severity"`
	Title    string           `json:"title"`
	Why      string           `json:"why"`
	Fix      string           `json:"fix"`
	Guide    string           `json:"guide"`
	// Misses says what the check does not catch.
	Misses string `json:"misses"`
}

//go:embed catalogue.yaml
var catalogueYAML []byte

// Catalogue returns every documented check, in catalogue order.
func Catalogue() ([]Doc, error) {
	var docs []Doc
	if err := yaml.UnmarshalStrict(catalogueYAML, &docs); err != nil {
		return nil, fmt.Errorf("catalogue.yaml: %w", err)
	}
	return docs, nil
}

// Finding is one problem found on one object.
type Finding struct {
	Check    string           `json:"check"`
	Name     string           `json:"name"`
	Severity finding.Severity `json:"severity"`
	Object   snapshot.Ref     `json:"object"`
	Message  string           `json:"message"`
	Fix      string           `json:"fix"`
	Source   snapshot.Source  `json:"-"`

	annotations map[string]string
	note        string
}

// Skipped is a check that could not run, with the reason.
type Skipped struct {
	Check  string `json:"check"`
	Name   string `json:"-"`
	Reason string `json:"reason"`
}

// Check is one check: an ID from the catalogue, the kinds it reads, and a
// pure function over the snapshot.
type Check struct {
	ID string
	// Needs are the kinds without which the check cannot say anything; when
	// one could not be read the check is skipped with the reason.
	Needs []snapshot.Kind
	// Uses are kinds read when available (the check still runs without).
	Uses []snapshot.Kind
	// NeedsSpec marks a check that compares the cluster with its spec
	// (Options.Spec): it is not run without one.
	NeedsSpec bool
	// Run reports findings through the Ctx. It must not modify the snapshot.
	Run func(*Ctx)
}

// Ctx is what a check function gets: the snapshot, indexes over it, and
// a way to report.
type Ctx struct {
	*Index
	check    *Check
	doc      Doc
	findings []Finding
}

// Report adds a finding on obj. fix overrides the catalogue's one-line fix
// when not empty.
func (c *Ctx) Report(obj *snapshot.Object, msg, fix string) {
	c.ReportNote(obj, msg, fix, "")
}

// ReportNote is Report for a finding that rests on an assumption: note
// says it in full, once per run (Result.Notes), however many findings
// share it; the message names it in a few words.
func (c *Ctx) ReportNote(obj *snapshot.Object, msg, fix, note string) {
	if fix == "" {
		fix = c.doc.Fix
	}
	c.findings = append(c.findings, Finding{Check: c.doc.ID, Name: c.doc.Name, Severity: c.doc.Severity,
		Object: obj.Ref(), Message: msg, Fix: fix, Source: obj.Source, note: note})
	c.findings[len(c.findings)-1].annotations = obj.Meta.Annotations
}

// Options select and suppress checks.
type Options struct {
	// Only, when not empty, runs just these checks (IDs or names).
	Only []string
	// Skip never runs these checks (IDs or names).
	Skip []string
	// Ignores suppress findings (from a config file).
	Ignores []Ignore
	// WindowsTaints are the Windows nodes' taints when the snapshot has no
	// Windows node (lint --spec: the plan's), and WindowsTaintsFrom says
	// where they come from ("cluster.yaml"). Unset, the guide's
	// os=windows:NoSchedule is assumed and findings say so.
	WindowsTaints     []snapshot.Taint
	WindowsTaintsFrom string
	// WindowsBuilds are the Windows nodes' builds (node.kubernetes.io/
	// windows-build) when the snapshot has no Windows node (lint --spec:
	// the plan's), and WindowsBuildsFrom where they come from. Unset, a
	// pinned build is compared with the Windows Server releases hybridctl
	// knows.
	WindowsBuilds     []string
	WindowsBuildsFrom string
	// ConsistentRead makes a live audit read each type as a watch-list
	// stream at one consistent resourceVersion instead of one LIST from the
	// watch cache (snapshot.LiveOptions.WatchList; doctor --consistent-read).
	ConsistentRead bool
	// Spec is the cluster spec the live cluster is compared with (doctor
	// -f); nil without one, and the checks that need it do not run.
	Spec *Spec
}

// Spec is what the checks read from a cluster spec.
type Spec struct {
	// File is the spec's file name, as findings cite it.
	File  string
	Nodes []SpecNode
}

// SpecNode is one node of the spec.
type SpecNode struct {
	Name string
	OS   string
	Role string
	// Line is the node's line in File.
	Line int
}

// Ignore suppresses a check, optionally only for one namespace or object.
type Ignore struct {
	Check     string `json:"check"`
	Namespace string `json:"namespace,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// Config is the --config file: a list of ignores.
type Config struct {
	Ignore []Ignore `json:"ignore"`
}

// ParseConfig reads a config file's contents.
func ParseConfig(b []byte) (*Config, error) {
	if err := manifest.CheckYAML(b, &manifest.AliasBudget{}); err != nil {
		return nil, err
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, err
	}
	for i, ig := range c.Ignore {
		if strings.TrimSpace(ig.Check) == "" {
			return nil, fmt.Errorf("ignore[%d]: check is required (an ID such as HC101 or a name)", i)
		}
	}
	return &c, nil
}

// Result is what a run produced.
type Result struct {
	Findings []Finding `json:"findings"`
	Skipped  []Skipped `json:"skipped"`
	// Diagnostics are the input's own problems (lint): documents that
	// could not be read or are not Kubernetes objects.
	Diagnostics []snapshot.Diagnostic `json:"diagnostics"`
	// Notes are the assumptions the findings rest on, each once
	// ("assumed: the Windows nodes carry the guide's taint ...").
	Notes      []string `json:"notes"`
	Suppressed int      `json:"-"`
	Ran        []Doc    `json:"-"`
}

// Resolve maps check IDs or names to IDs; unknown ones are an error
// naming, for each, the closest ID or name when it looks like a typo.
func Resolve(docs []Doc, refs []string) (map[string]bool, error) {
	out := map[string]bool{}
	var unknown []string
	for _, r := range refs {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		found := false
		for _, d := range docs {
			if strings.EqualFold(r, d.ID) || r == d.Name {
				out[d.ID], found = true, true
			}
		}
		if !found {
			unknown = append(unknown, Unknown(docs, r))
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s (--list-checks lists them; docs/checks.md)", strings.Join(unknown, "; "))
	}
	return out, nil
}

// Unknown is the message for a check reference that is neither an ID nor
// a name: `unknown check "HC1O1" (did you mean HC101?)`.
func Unknown(docs []Doc, ref string) string {
	known := make([]string, 0, 2*len(docs))
	for _, d := range docs {
		known = append(known, d.ID, d.Name)
	}
	msg := fmt.Sprintf("unknown check %q", ref)
	if s, ok := suggest.Closest(ref, known); ok {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return msg
}

// Lookup finds a check's doc by ID or name.
func Lookup(docs []Doc, ref string) (Doc, bool) {
	for _, d := range docs {
		if strings.EqualFold(ref, d.ID) || ref == d.Name {
			return d, true
		}
	}
	return Doc{}, false
}

// Selected returns the checks to run under opts.
func Selected(opts Options) ([]Check, []Doc, error) {
	docs, err := Catalogue()
	if err != nil {
		return nil, nil, err
	}
	only, err := Resolve(docs, opts.Only)
	if err != nil {
		return nil, nil, err
	}
	skip, err := Resolve(docs, opts.Skip)
	if err != nil {
		return nil, nil, err
	}
	for _, ig := range opts.Ignores {
		if _, err := Resolve(docs, []string{ig.Check}); err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
	}
	var cs []Check
	var ds []Doc
	for _, c := range All() {
		if (len(only) > 0 && !only[c.ID]) || skip[c.ID] {
			continue
		}
		d, ok := Lookup(docs, c.ID)
		if !ok {
			return nil, nil, fmt.Errorf("internal: check %s is not in the catalogue", c.ID)
		}
		if c.NeedsSpec && opts.Spec == nil {
			if only[c.ID] {
				return nil, nil, fmt.Errorf("check %s (%s) compares the cluster with its spec: give the spec with doctor -f cluster.yaml", d.ID, d.Name)
			}
			continue
		}
		cs = append(cs, c)
		ds = append(ds, d)
	}
	return cs, ds, nil
}

// Needs returns the kinds the selected checks read, for the live loader.
func Needs(cs []Check) []snapshot.Kind {
	seen := map[snapshot.Kind]bool{}
	var out []snapshot.Kind
	for _, c := range cs {
		for _, k := range append(append([]snapshot.Kind(nil), c.Needs...), c.Uses...) {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// Run runs the checks selected by opts over s.
func Run(s *snapshot.Snapshot, opts Options) (*Result, error) {
	cs, ds, err := Selected(opts)
	if err != nil {
		return nil, err
	}
	idx := NewIndex(s)
	if opts.WindowsTaintsFrom != "" {
		idx.taints, idx.taintsFrom = opts.WindowsTaints, "from "+opts.WindowsTaintsFrom
	}
	if opts.WindowsBuildsFrom != "" {
		idx.builds, idx.buildsFrom = opts.WindowsBuilds, opts.WindowsBuildsFrom
	}
	idx.spec = opts.Spec
	res := &Result{Findings: []Finding{}, Skipped: []Skipped{}, Notes: []string{}, Ran: ds,
		Diagnostics: append([]snapshot.Diagnostic{}, s.Diagnostics...)}
	for i := range cs {
		c, d := &cs[i], ds[i]
		if reason := unavailable(s, c.Needs); reason != "" {
			res.Skipped = append(res.Skipped, Skipped{Check: d.ID, Name: d.Name, Reason: reason})
			continue
		}
		ctx := &Ctx{Index: idx, check: c, doc: d}
		c.Run(ctx)
		for _, f := range ctx.findings {
			if suppressed(f, opts.Ignores) {
				res.Suppressed++
				continue
			}
			if f.note != "" && !slices.Contains(res.Notes, f.note) {
				res.Notes = append(res.Notes, f.note)
			}
			f.annotations, f.note = nil, ""
			res.Findings = append(res.Findings, f)
		}
	}
	sortFindings(res.Findings)
	return res, nil
}

// sortFindings puts findings in one total order: severity (most severe
// first), check, object, place in the input, message.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity.Rank() != b.Severity.Rank() {
			return a.Severity.Rank() > b.Severity.Rank()
		}
		for _, p := range [][2]string{
			{a.Check, b.Check},
			{a.Object.Namespace, b.Object.Namespace},
			{a.Object.Name, b.Object.Name},
			{a.Object.Kind, b.Object.Kind},
			{a.Object.APIVersion, b.Object.APIVersion},
			{a.Source.File, b.Source.File},
		} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		if a.Source.Line != b.Source.Line {
			return a.Source.Line < b.Source.Line
		}
		if a.Message != b.Message {
			return a.Message < b.Message
		}
		return a.Fix < b.Fix
	})
}

func unavailable(s *snapshot.Snapshot, needs []snapshot.Kind) string {
	var rs []string
	for _, k := range needs {
		if r, ok := s.Unavailable[k]; ok {
			rs = append(rs, r)
		}
	}
	return strings.Join(rs, "; ")
}

// suppressed applies the ignore annotation and the config file.
func suppressed(f Finding, ignores []Ignore) bool {
	match := func(ref string) bool { return strings.EqualFold(ref, f.Check) || ref == f.Name }
	for _, r := range strings.Split(f.annotations[snapshot.IgnoreAnnotation], ",") {
		if match(strings.TrimSpace(r)) {
			return true
		}
	}
	for _, ig := range ignores {
		if !match(strings.TrimSpace(ig.Check)) {
			continue
		}
		if ig.Namespace != "" && ig.Namespace != f.Object.Namespace {
			continue
		}
		if ig.Kind != "" && !strings.EqualFold(ig.Kind, f.Object.Kind) {
			continue
		}
		if ig.Name != "" && ig.Name != f.Object.Name {
			continue
		}
		return true
	}
	return false
}

// count is "1 pod", "3 pods": messages never say "pod(s)".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// isAre is "is 1 Windows node", "are 2 Windows nodes".
func isAre(n int, noun string) string {
	if n == 1 {
		return "is " + count(n, noun)
	}
	return "are " + count(n, noun)
}
