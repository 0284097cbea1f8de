package checks

import (
	"fmt"
	"strings"

	"github.com/hybridctl/hybridctl/internal/finding"
)

// Explain renders one check's documentation for a terminal.
func Explain(d Doc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s)\n\n%s\n\n", d.ID, d.Name, d.Severity, d.Title)
	fmt.Fprintf(&b, "Why:\n%s\n\n", finding.Wrap(d.Why, 78, "  "))
	fmt.Fprintf(&b, "Fix:\n%s\n\n", finding.Wrap(d.Fix, 78, "  "))
	fmt.Fprintf(&b, "Guide: %s\n", d.Guide)
	fmt.Fprintf(&b, "Suppress: annotation hybridctl.dev/ignore: %q, or --skip %s\n", d.ID, d.Name)
	return b.String()
}

// CorpusStats is what the checks said about the real-world corpus
// (testdata/third_party/corpus): how much it holds, and per check the
// objects it reported ("project/file Kind namespace/name").
type CorpusStats struct {
	Projects, Manifests, Workloads int
	Hits                           map[string][]string
}

// Markdown renders the catalogue as docs/checks.md; corpus, when not nil,
// adds per check what it reported on the real-world corpus.
func Markdown(docs []Doc, corpus *CorpusStats) string {
	var b strings.Builder
	b.WriteString("<!-- Generated from internal/checks/catalogue.yaml by `go test ./internal/checks -run TestDocs -update`. Do not edit. -->\n\n")
	b.WriteString("# Check reference\n\n")
	b.WriteString("`hybridctl doctor` (a live cluster) and `hybridctl lint` (manifests) run the same checks. Every check has a stable ID and a name; ")
	b.WriteString("either works in `--checks`, `--skip`, `--explain`, the `hybridctl.dev/ignore` annotation and the `--config` file. ")
	b.WriteString("The guide column names the section of the hybrid-cluster guide that explains the requirement.\n\n")
	if corpus != nil {
		fmt.Fprintf(&b, "Every check was run on a corpus of %d real-world manifests from %d public projects (%d workloads, `testdata/third_party/corpus`, each labelled by hand; see `TestCorpus`); loaded into the real kube-apiserver next to the guide's nodes, the same objects give doctor the same findings (`TestLiveCorpus`, docs/testing.md). Each check also has failing, passing and near-miss fixtures (`internal/checks/testdata/HCnnn`). Under each check, **Tried on** lists what it reported there; **Does not catch** says where it is blind.\n\n",
			corpus.Manifests, corpus.Projects, corpus.Workloads)
	}
	b.WriteString("| ID | name | severity | what |\n|---|---|---|---|\n")
	for _, d := range docs {
		fmt.Fprintf(&b, "| [%s](#%s) | `%s` | %s | %s |\n", d.ID, strings.ToLower(d.ID), d.Name, d.Severity, d.Title)
	}
	for _, d := range docs {
		fmt.Fprintf(&b, "\n## %s\n\n", d.ID)
		fmt.Fprintf(&b, "**`%s`** · %s · %s\n\n", d.Name, d.Severity, d.Title)
		fmt.Fprintf(&b, "%s\n\n", d.Why)
		fmt.Fprintf(&b, "**Fix:** %s\n\n", d.Fix)
		fmt.Fprintf(&b, "**Guide:** %s\n", d.Guide)
		if corpus != nil {
			hits := corpus.Hits[d.ID]
			switch {
			case len(hits) == 0:
				b.WriteString("\n**Tried on** the real-world corpus: reported nothing there (its manifests hold no objects this check reads, or none that are wrong).\n")
			default:
				shown := hits
				more := ""
				if len(shown) > 6 {
					shown, more = shown[:6], fmt.Sprintf(", and %d more", len(hits)-6)
				}
				fmt.Fprintf(&b, "\n**Tried on** the real-world corpus: reported %d object(s): %s%s.\n", len(hits), "`"+strings.Join(shown, "`, `")+"`", more)
			}
		}
		if d.Misses != "" {
			fmt.Fprintf(&b, "\n**Does not catch:** %s.\n", d.Misses)
		}
	}
	return b.String()
}
