package snapshot

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/manifest"
)

// readYAML cuts a multi-document YAML stream into documents, the items of
// a List one by one (manifest.Splitter), and hands them to the workers. A
// document that may hold aliases is measured first, here and in the
// input's order, against the input's alias budget: one that expands too
// far becomes an error diagnostic and is not expanded at all. (A document
// yaml.v3 cannot parse is left to the worker, which reports the error;
// nothing expands it.)
func (p *pipeline) readYAML(ctx context.Context, file string, br *bufio.Reader) error {
	sp := manifest.Splitter{MaxDocument: p.max, Items: true}
	return sp.Split(ctx, br, func(md *manifest.Document) error {
		if md.TooLarge {
			return p.send(ctx, doc{file: file, line: md.Line, diag: tooLarge(file, md.Line, p.max)})
		}
		d := doc{file: file, line: md.Line, template: md.Source, lines: md.Lines}
		if manifest.MayHaveAlias(md.Data) {
			var n yaml.Node
			if yaml.Unmarshal(md.Data, &n) == nil {
				var ae *manifest.AliasError
				if err := p.aliases.Charge(&n); errors.As(err, &ae) {
					line := md.Lines.Line(max(ae.Line, 1))
					return p.send(ctx, doc{file: file, line: line, diag: &Diagnostic{Severity: finding.Error, File: file, Line: line,
						Message: fmt.Sprintf("cannot read this YAML document (document %d of the file): %s", md.Number, ae.Reason()),
						Fix:     aliasFix(ae)}})
				}
			}
		}
		return p.send(ctx, p.copyDoc(d, md.Data))
	})
}

func aliasFix(ae *manifest.AliasError) string {
	if ae.Whole {
		return "write the aliased values out, or lint the files in smaller groups"
	}
	return "write the aliased values out: a Kubernetes object rarely needs YAML aliases"
}
