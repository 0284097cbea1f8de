package spec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/manifest"

	"gopkg.in/yaml.v3"

	"github.com/hybridctl/hybridctl/internal/suggest"
)

// MaxSpecBytes bounds the size of a spec file; a cluster spec is a few KB.
const MaxSpecBytes = 4 << 20

// Result is a loaded spec: the cluster with defaults applied and every
// diagnostic found, errors and warnings.
type Result struct {
	File        string
	Cluster     *Cluster
	Diagnostics Diagnostics
	lines       lineIndex
}

// Err returns an *InvalidError when the spec has errors, nil otherwise.
func (r *Result) Err() error {
	if len(r.Diagnostics.Errors()) == 0 {
		return nil
	}
	return &InvalidError{File: r.File, Diagnostics: r.Diagnostics}
}

// Line returns the line of a field path in the source, or of its nearest
// ancestor present in the source; 0 when unknown.
func (r *Result) Line(path string) int { return r.lines.lookup(path) }

// Load reads, parses, defaults and validates a spec. The error is an I/O
// error (wrapped, naming the file) or an *InvalidError listing every problem.
// Warnings are available through LoadFile.
func Load(ctx context.Context, path string) (*Cluster, error) {
	r, err := LoadFile(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return r.Cluster, nil
}

// LoadFile reads a spec from the file at path and returns the result with
// all diagnostics (for standard input, read it and call Parse). The error is
// non-nil only when the file cannot be read.
func LoadFile(ctx context.Context, path string) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading cluster spec: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading cluster spec %s: %w", path, err)
	}
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("reading cluster spec %s: larger than %d bytes", path, MaxSpecBytes)
	}
	r := Parse(path, data)
	r.ReadRegistryCA(ctx, filepath.Dir(path))
	return r, nil
}

// Parse parses spec source. It never panics and never fails: everything
// wrong is a diagnostic in the result. When the structure is too broken to
// decode, Cluster is nil.
func Parse(file string, data []byte) *Result {
	r := &Result{File: file, lines: lineIndex{}}
	add := func(line int, path, msg string) {
		r.Diagnostics = append(r.Diagnostics, Diagnostic{
			Severity: finding.Error, Rule: ruleStructure.ID, Name: ruleStructure.Name,
			File: file, Line: line, Path: path, Message: msg,
		})
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			add(1, "", "the file is empty; want a hybridctl.dev/v1alpha1 Cluster (try 'hybridctl init')")
		} else if line, col, ok := manifest.TabIndent(data, err); ok {
			add(line, "", fmt.Sprintf("invalid YAML: a tab character at line %d, column %d: YAML indents with spaces only; replace the tab with spaces", line, col))
		} else if line, msg := yamlErrorLine(err); line > 0 {
			if bad, indent, levels, ok := misIndented(data, line, err); ok {
				add(bad, "", fmt.Sprintf("%s: this line is indented %d spaces, which matches no enclosing level (%s)", msg, indent, levels))
			} else {
				add(line, "", msg)
			}
		} else {
			_, msg := yamlErrorLine(err)
			add(unplacedLine(data), "", msg)
		}
		return r
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		add(extra.Line, "", "the file holds more than one YAML document; a spec is one Cluster document")
	} else if !errors.Is(err, io.EOF) {
		line, msg := yamlErrorLine(err)
		if line < 1 {
			line = unplacedLine(data)
		}
		add(line, "", msg)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	// More nodes than Kubernetes supports: refused before the rest of
	// the work, which grows with the nodes (a 4 MiB spec holds ~100,000).
	if line, n := nodeCount(root); n > MaxNodes {
		r.Diagnostics = append(r.Diagnostics, nodeCountDiagnostic(file, line, n))
		return r
	}
	w := walker{file: file, lines: r.lines}
	w.walk(root, reflect.TypeOf(Cluster{}), "")
	r.Diagnostics = append(r.Diagnostics, w.diags...)
	if w.fatal {
		r.Diagnostics.sort()
		return r
	}
	var c Cluster
	if err := root.Decode(&c); err != nil {
		// The walker checks every shape the decoder needs; reaching this
		// is a bug, but still an error and not a panic.
		line, msg := yamlErrorLine(err)
		add(line, "", msg)
		r.Diagnostics.sort()
		return r
	}
	r.Cluster = &c
	SetDefaults(r.Cluster)
	r.Diagnostics = append(r.Diagnostics, validate(r)...)
	r.Diagnostics = dedupe(r.Diagnostics)
	r.Diagnostics.sort()
	return r
}

// dedupe drops validation diagnostics on a path that has a structural error,
// or below it (the field could not be read, so rules on it or on what it
// should have held would only repeat the problem).
func dedupe(ds Diagnostics) Diagnostics {
	var broken []string
	for _, d := range ds {
		if d.Rule == ruleStructure.ID && d.Path != "" {
			broken = append(broken, d.Path)
		}
	}
	if len(broken) == 0 {
		return ds
	}
	under := func(path string) bool {
		for _, b := range broken {
			if path == b || strings.HasPrefix(path, b+".") || strings.HasPrefix(path, b+"[") {
				return true
			}
		}
		return false
	}
	out := ds[:0]
	for _, d := range ds {
		if d.Rule != ruleStructure.ID && under(d.Path) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// misIndented finds the line a block-structure error of the YAML decoder
// comes from. yaml.v3 reports such an error at the start of the enclosing
// mapping (a key mis-indented on line 55 is reported at line 17); this
// follows the indentation from there and returns the first line indented
// deeper than its block without a key that opens one, or between two
// levels. It is a heuristic, used only when the decoder failed and only
// for a line at or after the decoder's; otherwise ok is false and the
// decoder's line stands.
func misIndented(data []byte, from int, err error) (line, indent int, levels string, ok bool) {
	m := err.Error()
	if !strings.Contains(m, "did not find expected key") && !strings.Contains(m, "mapping values are not allowed") && !strings.Contains(m, "did not find expected '-' indicator") {
		return 0, 0, "", false
	}
	stack := []int{0}
	opens := true // the previous line opens a block (the document start does)
	scalarAt := -1
	for n, l := range strings.Split(string(data), "\n") {
		t := strings.TrimLeft(l, " ")
		i := len(l) - len(t)
		if scalarAt >= 0 {
			if t == "" || i > scalarAt {
				continue // inside a block scalar (| or >)
			}
			scalarAt = -1
		}
		if t == "" || strings.HasPrefix(t, "#") || t == "---" {
			continue
		}
		code := t
		if k := strings.Index(code, " #"); k >= 0 {
			code = code[:k]
		}
		if strings.ContainsRune(code, '\t') || strings.Count(code, `"`)%2 != 0 || strings.Count(code, "'")%2 != 0 ||
			strings.Count(code, "[") != strings.Count(code, "]") || strings.Count(code, "{") != strings.Count(code, "}") {
			return 0, 0, "", false // tabs, strings or flow collections over several lines: do not guess
		}
		top := stack[len(stack)-1]
		switch {
		case opens && i > top:
			stack = append(stack, i)
		default:
			for len(stack) > 1 && stack[len(stack)-1] > i {
				stack = stack[:len(stack)-1]
			}
			if stack[len(stack)-1] != i {
				if n+1 < from {
					return 0, 0, "", false
				}
				lv := make([]string, len(stack))
				for k, x := range stack {
					lv[k] = strconv.Itoa(x)
				}
				if i > top {
					lv = append(lv[:0:0], strconv.Itoa(top))
					return n + 1, i, "the line before it is at " + lv[0] + " and opens no block", true
				}
				return n + 1, i, "enclosing levels are at " + strings.Join(lv, ", ") + " spaces", true
			}
		}
		content := t
		for strings.HasPrefix(content, "- ") {
			// A list item: its content is a level of its own.
			i += 2
			content = strings.TrimLeft(content[2:], " ")
			stack = append(stack, i)
		}
		if k := strings.Index(content, " #"); k >= 0 {
			content = strings.TrimSpace(content[:k])
		}
		opens = strings.HasSuffix(content, ":") || content == "-"
		if strings.HasSuffix(content, "|") || strings.HasSuffix(content, ">") || strings.HasSuffix(content, "|-") || strings.HasSuffix(content, ">-") {
			scalarAt = i
		}
	}
	return 0, 0, "", false
}

func yamlErrorLine(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ":"); i > 0 {
			if n, convErr := strconv.Atoi(rest[:i]); convErr == nil {
				return n, "invalid YAML: " + strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return 0, "invalid YAML: " + msg
}

// nodeCount is the length of spec.nodes in the YAML tree and the line of
// its key; 0 when it is not a list.
func nodeCount(root *yaml.Node) (line, n int) {
	field := func(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil, nil
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i], m.Content[i+1]
			}
		}
		return nil, nil
	}
	_, spec := field(root, "spec")
	key, nodes := field(spec, "nodes")
	if nodes == nil || nodes.Kind != yaml.SequenceNode {
		return 0, 0
	}
	return key.Line, len(nodes.Content)
}

// unplacedLine is the line of a YAML error the decoder gave without one:
// the line of the first byte that is not UTF-8 when there is one (the
// decoder's reader errors carry no line), else the first line (the
// decoder leaves out "line 1").
func unplacedLine(data []byte) int {
	if !utf8.Valid(data) {
		for i := 0; i < len(data); {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				return bytes.Count(data[:i], []byte("\n")) + 1
			}
			i += size
		}
	}
	return 1
}

// lineIndex maps field paths (spec.nodes[3].name) to source lines.
type lineIndex map[string]int

func (li lineIndex) lookup(path string) int {
	for p := path; ; {
		if l, ok := li[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return li[""]
		}
		p = p[:i]
	}
}

// walker checks a YAML tree against the Go types strictly: unknown and
// duplicate keys, wrong shapes and scalar types are errors with their path
// and line. It records the line of every path it sees.
type walker struct {
	file  string
	lines lineIndex
	diags Diagnostics
	fatal bool // the document's root is not a mapping: nothing to decode
}

// errorf reports a structural error. With drop set, the offending node is
// turned into a null so that decoding goes on with the field's zero value
// and every other problem in the file is still found.
func (w *walker) errorf(n *yaml.Node, path string, drop bool, format string, a ...any) {
	w.diags = append(w.diags, Diagnostic{
		Severity: finding.Error, Rule: ruleStructure.ID, Name: ruleStructure.Name,
		File: w.file, Line: n.Line, Path: path, Message: fmt.Sprintf(format, a...),
	})
	if drop {
		if path == "" {
			w.fatal = true
		}
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
	}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	if _, seen := w.lines[path]; !seen {
		w.lines[path] = n.Line
	}
	if n.Kind == yaml.AliasNode {
		w.errorf(n, path, true, "YAML aliases are not supported in a cluster spec")
		return
	}
	if n.Tag == "!!null" {
		return // an explicit null leaves the zero value; validation says if it is required
	}
	switch t.Kind() {
	case reflect.Pointer:
		w.walk(n, t.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.errorf(n, path, true, "want a mapping (key: value), got %s", describe(n))
			return
		}
		fields := yamlFields(t)
		seen := map[string]int{}
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			fp := join(path, key)
			if k.Kind != yaml.ScalarNode {
				w.errorf(k, path, false, "a key must be a plain name, got %s", describe(k))
				continue
			}
			if prev, dup := seen[key]; dup {
				w.errorf(k, fp, false, "%q is set twice (first on line %d)", key, prev)
				continue
			}
			seen[key] = k.Line
			ft, ok := fields[key]
			if !ok {
				if homes := fieldHomes(reflect.TypeOf(Cluster{}), key, 3); len(homes) > 0 {
					// Known elsewhere: most often a block indented under
					// the wrong parent.
					w.errorf(k, fp, false, "field %s is not known under %s; it belongs under %s%s", key, pathName(path), strings.Join(homes, " or "), closeField(key, fields))
					continue
				}
				w.errorf(k, fp, false, "unknown field %q%s", key, suggestField(key, fields))
				continue
			}
			w.lines[fp] = k.Line
			w.walk(v, ft, fp)
			kept = append(kept, k, v)
		}
		// Dropped pairs (unknown, duplicate, odd keys) are not decoded.
		n.Content = kept
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.errorf(n, path, true, "want a list, got %s", describe(n))
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.errorf(n, path, true, "want a string, got %s", describe(n))
		}
	case reflect.Int:
		if n.Kind != yaml.ScalarNode {
			w.errorf(n, path, true, "want a whole number, got %s", describe(n))
			return
		}
		_, err := strconv.ParseInt(n.Value, 0, 32)
		switch {
		case n.Tag != "!!int":
			w.errorf(n, path, true, "want a whole number, got %q", n.Value)
		case errors.Is(err, strconv.ErrRange):
			w.errorf(n, path, true, "%s is out of range: at least %d and at most %d", n.Value, math.MinInt32, math.MaxInt32)
		case err != nil:
			w.errorf(n, path, true, "want a whole number, got %q", n.Value)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			w.errorf(n, path, true, "want true or false, got %s", describe(n))
		}
	default:
		w.errorf(n, path, true, "unsupported field type %s", t)
	}
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// yamlFields maps the YAML keys of a struct type to their field types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	m := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		m[name] = f.Type
	}
	return m
}

// fieldHomes names, shallowest first and at most max of them, the places in
// the document of type root where key is a field: "spec", "spec.nodes[]"
// (any item of the list), "the top level".
func fieldHomes(root reflect.Type, key string, max int) []string {
	type place struct {
		t    reflect.Type
		path string
	}
	var homes []string
	seen := map[reflect.Type]bool{}
	level := []place{{root, ""}}
	for len(level) > 0 && len(homes) < max {
		var next []place
		for _, p := range level {
			t := p.t
			for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
				if t.Kind() == reflect.Slice {
					p.path += "[]"
				}
				t = t.Elem()
			}
			if t.Kind() != reflect.Struct || seen[t] {
				continue
			}
			seen[t] = true
			fields := yamlFields(t)
			if _, ok := fields[key]; ok && len(homes) < max {
				homes = append(homes, pathName(p.path))
			}
			names := make([]string, 0, len(fields))
			for name := range fields {
				names = append(names, name)
			}
			sortStrings(names)
			for _, name := range names {
				next = append(next, place{fields[name], join(p.path, name)})
			}
		}
		level = next
	}
	return homes
}

// pathName is a path of the document in words: the root is "the top level".
func pathName(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

// closeField is "; or did you mean NAME?" for a known field of fields close
// to key, or "".
func closeField(key string, fields map[string]reflect.Type) string {
	if s := suggestField(key, fields); strings.HasPrefix(s, "; did you mean ") {
		return "; or did you mean " + strings.TrimPrefix(s, "; did you mean ")
	}
	return ""
}

// suggestField proposes the known field closest to a misspelled one.
func suggestField(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for name := range fields {
		d := suggest.Distance(strings.ToLower(key), strings.ToLower(name))
		if d < bestD || (d == bestD && best != "" && name < best) {
			best, bestD = name, d
		}
	}
	if best == "" {
		names := make([]string, 0, len(fields))
		for name := range fields {
			names = append(names, name)
		}
		sortStrings(names)
		return "; known fields: " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("; did you mean %q?", best)
}
