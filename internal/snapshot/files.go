package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Stdin is the path that names standard input.
const Stdin = "-"

// ParseError is a manifest that could not be read, with its place.
type ParseError struct {
	File string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// doc is one document cut out of a file.
type doc struct {
	file     string
	line     int // line of the document's first content line
	template string
	data     []byte
	json     bool
	err      error // the document could not be cut out (JSON syntax)
}

// LoadFiles reads manifests from paths (files, directories searched
// recursively for *.yaml, *.yml and *.json, or "-" for stdin) into a new
// snapshot. Every object keeps its file and line. Documents that cannot be
// parsed are returned as *ParseError values joined with errors.Join, after
// every path has been read; I/O errors (a missing file) are returned as
// they are, wrapped with the path.
func LoadFiles(ctx context.Context, paths []string, stdin io.Reader) (*Snapshot, error) {
	s := New()
	// Files are parsed one at a time (their documents on all CPUs), so
	// memory holds one file's text, not the whole input's.
	var errs []error
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p == Stdin {
			b, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("read stdin: %w", err)
			}
			errs = append(errs, s.addDocs(ctx, splitDocs("<stdin>", b))...)
			continue
		}
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", f, err)
			}
			errs = append(errs, s.addDocs(ctx, splitDocs(f, b))...)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.Sort()
	return s, errors.Join(errs...)
}

// expand turns a path into the files to read.
func expand(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	sort.Strings(out)
	return out, nil
}

// addDocs decodes documents on all CPUs and adds them to the snapshot.
func (s *Snapshot) addDocs(ctx context.Context, docs []doc) []error {
	errs := make([]error, len(docs))
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = s.addDoc(docs[i])
			}
		}()
	}
	for i := range docs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// addDoc decodes one document (a single object or a List) and adds it.
func (s *Snapshot) addDoc(d doc) error {
	if d.err != nil {
		return &ParseError{File: d.file, Line: d.line, Err: d.err}
	}
	data := d.data
	if !d.json {
		j, err := yamlToJSON(data)
		if err != nil {
			line, msg := d.line, err.Error()
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				n, _ := strconv.Atoi(m[1])
				line, msg = d.line+n-1, m[2]
			}
			return &ParseError{File: d.file, Line: line, Err: errors.New(msg)}
		}
		data = j
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return nil
	}
	if data[0] != '{' {
		return &ParseError{File: d.file, Line: d.line, Err: errors.New("not a Kubernetes object (expected a mapping with apiVersion and kind)")}
	}
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return &ParseError{File: d.file, Line: d.line, Err: fieldError(err)}
	}
	src := Source{File: d.file, Line: d.line, Template: d.template}
	if head.Kind == "List" || (strings.HasSuffix(head.Kind, "List") && head.Items != nil) {
		for i, it := range head.Items {
			if err := s.Add(it, src); err != nil {
				return &ParseError{File: d.file, Line: d.line, Err: fmt.Errorf("items[%d]: %w", i, err)}
			}
		}
		return nil
	}
	if head.Kind == "" || head.APIVersion == "" {
		return &ParseError{File: d.file, Line: d.line, Err: fmt.Errorf("%s %s: object has no apiVersion or kind", orUnknown(head.Kind), nameOf(data))}
	}
	if err := s.AddKind(KindOf(head.APIVersion, head.Kind), head.APIVersion, head.Kind, data, src); err != nil {
		return &ParseError{File: d.file, Line: d.line, Err: fmt.Errorf("%s %s: %w", orUnknown(head.Kind), nameOf(data), err)}
	}
	return nil
}

func orUnknown(k string) string {
	if k == "" {
		return "object"
	}
	return k
}

func nameOf(data []byte) string {
	var m struct {
		Meta struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if json.Unmarshal(data, &m) != nil || m.Meta.Name == "" {
		return "(unnamed)"
	}
	if m.Meta.Namespace != "" {
		return m.Meta.Namespace + "/" + m.Meta.Name
	}
	return m.Meta.Name
}

// splitDocs cuts a file into documents. JSON files (first byte '{' or '[')
// are a stream of JSON values; anything else is multi-document YAML, split
// at "---" lines. A Helm "# Source: path" comment names the template of the
// document it precedes.
func splitDocs(file string, b []byte) []doc {
	trimmed := bytes.TrimLeft(b, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return splitJSON(file, b)
	}
	var docs []doc
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), len(b)+1)
	var cur bytes.Buffer
	first, template := 0, ""
	flush := func() {
		if first > 0 {
			// Keep the leading lines so that YAML error line numbers count
			// from the document's first line.
			docs = append(docs, doc{file: file, line: first, template: template, data: append([]byte(nil), cur.Bytes()...)})
		}
		cur.Reset()
		first, template = 0, ""
	}
	line := 0
	for sc.Scan() {
		line++
		t := sc.Text()
		if strings.HasPrefix(t, "---") && (len(t) == 3 || t[3] == ' ' || t[3] == '\t') {
			flush()
			if rest := strings.TrimSpace(t[3:]); rest != "" && !strings.HasPrefix(rest, "#") {
				// "--- {inline: doc}" puts content on the marker line.
				cur.WriteString(rest)
				cur.WriteByte('\n')
				first = line
			}
			continue
		}
		if t == "..." {
			flush()
			continue
		}
		trim := strings.TrimSpace(t)
		if first == 0 {
			if strings.HasPrefix(trim, "# Source: ") {
				template = strings.TrimPrefix(trim, "# Source: ")
			}
			if trim == "" || strings.HasPrefix(trim, "#") {
				// Blank lines and comments before content keep line
				// numbering but are not the object's line.
				cur.WriteByte('\n')
				continue
			}
			first = line
			// Error line numbers from the YAML parser count from the
			// document's first line; drop what was buffered before it.
			cur.Reset()
		}
		cur.WriteString(t)
		cur.WriteByte('\n')
	}
	flush()
	return docs
}

// splitJSON cuts a stream of JSON values into documents; a top-level array
// is a list of objects.
func splitJSON(file string, b []byte) []doc {
	var docs []doc
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		off := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		line := lineAt(b, int(off)+leadingSpace(b[off:]))
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line = lineAt(b, int(se.Offset))
			}
			docs = append(docs, doc{file: file, line: line, json: true, err: err})
			break
		}
		if len(raw) > 0 && raw[0] == '[' {
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) == nil {
				for _, it := range items {
					docs = append(docs, doc{file: file, line: line, json: true, data: it})
				}
				continue
			}
		}
		if len(raw) > 0 && raw[0] == '{' {
			// A List's items become documents of their own, so they are
			// decoded in parallel (they keep the List's line).
			var l struct {
				Kind  string            `json:"kind"`
				Items []json.RawMessage `json:"items"`
			}
			if json.Unmarshal(raw, &l) == nil && strings.HasSuffix(l.Kind, "List") && l.Items != nil {
				for _, it := range l.Items {
					docs = append(docs, doc{file: file, line: line, json: true, data: it})
				}
				continue
			}
		}
		docs = append(docs, doc{file: file, line: line, json: true, data: raw})
	}
	return docs
}

func leadingSpace(b []byte) int {
	return len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
}

func lineAt(b []byte, off int) int {
	if off > len(b) {
		off = len(b)
	}
	return bytes.Count(b[:off], []byte{'\n'}) + 1
}
