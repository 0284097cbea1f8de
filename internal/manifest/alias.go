package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"gopkg.in/yaml.v3"
)

// The most YAML aliases may add to what is read, measured as the JSON the
// expanded values would take (a scalar counts its length plus three bytes,
// a collection two bytes plus its contents). An alias adds its anchored
// value once for every place it is used; documents without aliases cost
// nothing.
const (
	// MaxAliasExpansionPerDocument bounds one document.
	MaxAliasExpansionPerDocument = 1 << 20
	// MaxAliasExpansion bounds one input: every document of every file
	// one command reads.
	MaxAliasExpansion = 8 << 20
)

// saturated stands for a size past every limit (an alias whose value
// contains the alias itself expands without end).
const saturated = 1 << 62

// AliasBudget bounds the alias expansion of one input, document by
// document. The zero value is ready to use, with the package's limits; it
// is safe for concurrent use, but documents must be charged in the order
// of the input for the outcome to be deterministic.
type AliasBudget struct {
	// PerDocument and Total override MaxAliasExpansionPerDocument and
	// MaxAliasExpansion when positive.
	PerDocument, Total int64

	mu   sync.Mutex
	used int64
}

func (b *AliasBudget) limits() (perDoc, total int64) {
	perDoc, total = MaxAliasExpansionPerDocument, MaxAliasExpansion
	if b.PerDocument > 0 {
		perDoc = b.PerDocument
	}
	if b.Total > 0 {
		total = b.Total
	}
	return perDoc, total
}

// Used is the expansion charged so far.
func (b *AliasBudget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// AliasError is a document whose aliases expand past a limit.
type AliasError struct {
	// Document is the document's 1-based number in its stream, 0 when
	// the caller reads a single document.
	Document int
	// Line is the line of the alias that crossed the limit.
	Line int
	// Limit is the limit crossed, in bytes; Whole says whether it is the
	// limit of the whole input (else of one document).
	Limit int64
	Whole bool
	// Endless is an alias used inside the value it names.
	Endless bool
}

func (e *AliasError) Error() string {
	var where string
	switch {
	case e.Document > 0 && e.Line > 0:
		where = fmt.Sprintf("document %d, line %d: ", e.Document, e.Line)
	case e.Document > 0:
		where = fmt.Sprintf("document %d: ", e.Document)
	case e.Line > 0:
		where = fmt.Sprintf("line %d: ", e.Line)
	}
	return where + e.Reason()
}

// Reason is the error without the document and line.
func (e *AliasError) Reason() string {
	switch {
	case e.Endless:
		return "an alias used inside the value it names expands without end"
	case e.Whole:
		return fmt.Sprintf("aliases expand the input by more than %s, the most all of its documents together may grow through aliases", size(e.Limit))
	}
	return fmt.Sprintf("aliases expand this document by more than %s, the most one document may grow through aliases", size(e.Limit))
}

func size(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Charge measures what the aliases of one parsed document (a yaml.v3 node
// tree, not yet expanded) would add, and charges it to the budget. It
// fails, charging nothing, when the document crosses its own limit or the
// input's; the error's Document is 0 (the caller knows the number).
func (b *AliasBudget) Charge(doc *yaml.Node) error {
	perDoc, total := b.limits()
	m := measure{sizes: map[*yaml.Node]int64{}}
	b.mu.Lock()
	defer b.mu.Unlock()
	left := total - b.used
	limit, whole := perDoc, false
	if left < perDoc {
		limit, whole = max(left, 0), true
	}
	m.limit = limit
	if !m.walk(doc) {
		e := &AliasError{Line: m.line, Limit: perDoc, Endless: m.endless}
		if whole && !m.endless {
			e.Limit, e.Whole = total, true
		}
		return e
	}
	b.used += m.added
	return nil
}

// measure adds up, in document order, what each alias of a document adds.
type measure struct {
	sizes   map[*yaml.Node]int64 // expanded sizes of aliased nodes; -1 while being measured
	added   int64
	limit   int64
	line    int  // the alias that crossed the limit
	endless bool // an alias inside its own value
}

// walk visits the document as written (not through aliases); it reports
// false at the first alias that takes the total past the limit.
func (m *measure) walk(n *yaml.Node) bool {
	if n == nil {
		return true
	}
	if n.Kind == yaml.AliasNode {
		s := m.size(n.Alias)
		if s >= saturated {
			m.line, m.endless = n.Line, m.endless || s > saturated
			return false
		}
		m.added += s
		if m.added > m.limit {
			m.line = n.Line
			return false
		}
		return true
	}
	for _, c := range n.Content {
		if !m.walk(c) {
			return false
		}
	}
	return true
}

// size is the JSON size of n with its aliases expanded, saturating:
// saturated past any limit, saturated+1 for an alias inside its own value.
func (m *measure) size(n *yaml.Node) int64 {
	if n == nil {
		return 0
	}
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 0
		}
		n = n.Alias
	}
	if s, ok := m.sizes[n]; ok {
		if s < 0 {
			return saturated + 1
		}
		return s
	}
	if n.Kind == yaml.ScalarNode {
		return int64(len(n.Value)) + 3
	}
	// Only an anchored node can be reached more than once, or from
	// inside itself: it alone is remembered.
	if n.Anchor != "" {
		m.sizes[n] = -1
	}
	s := int64(2)
	for _, c := range n.Content {
		cs := m.size(c)
		if cs > saturated {
			s = cs
			break
		}
		s = min(s+cs, saturated)
	}
	if n.Anchor != "" {
		m.sizes[n] = s
	}
	return s
}

// MayHaveAlias reports whether data may hold a YAML alias: a '*' that is
// not a whole quoted scalar ('*' or "*", as RBAC rules write it). It errs
// on the side of yes; no means no parser will find an alias in data.
func MayHaveAlias(data []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '*')
		if j < 0 {
			return false
		}
		i += j
		if i == 0 || i+1 >= len(data) || data[i-1] != data[i+1] || (data[i-1] != '\'' && data[i-1] != '"') {
			return true
		}
		i++
	}
}

// CheckYAML checks every document of a YAML stream against the budget
// before another parser (client-go's, sigs.k8s.io/yaml) expands its
// aliases. A stream that may hold aliases is parsed with yaml.v3 first; a
// stream it cannot parse is refused with yaml.v3's error, since its aliases
// cannot be measured. Errors are *AliasError (with the document's number)
// or a syntax error naming the document.
func CheckYAML(data []byte, b *AliasBudget) error {
	if !MayHaveAlias(data) {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if err := b.Charge(&n); err != nil {
			var ae *AliasError
			if errors.As(err, &ae) {
				ae.Document = i
			}
			return err
		}
	}
}
