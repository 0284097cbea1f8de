package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/manifest"
)

// Stdin is the path that names standard input.
const Stdin = "-"

// MaxDocument is the largest single document (or List item) the file
// loader reads: 32 MiB. A larger one is an error diagnostic; the loader
// skips it and goes on with the next.
const MaxDocument = 32 << 20

// Diagnostic is a problem with the input itself, not with an object: a
// document that cannot be read (error) or that is not a Kubernetes object,
// such as a kustomization.yaml (warning). It never hides the findings of
// the other objects.
type Diagnostic struct {
	Severity finding.Severity `json:"severity"`
	File     string           `json:"file"`
	Line     int              `json:"line"`
	Message  string           `json:"message"`
	Fix      string           `json:"fix,omitempty"`

	order int // the document's place in the input, for a stable order
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", d.File, d.Line, d.Severity, d.Message)
}

// FileOptions tune the file loader; the zero value is the default.
type FileOptions struct {
	// Workers decode documents in parallel (default GOMAXPROCS).
	Workers int
	// MaxDocument caps one document's size (default MaxDocument).
	MaxDocument int
	// KeepAllPods keeps every pod a controller owns. By default the
	// loader keeps only those a check can read (Snapshot.SlimPods), so
	// that memory grows with what the checks read, not with the input.
	KeepAllPods bool
}

// LoadFiles reads manifests from paths (files, directories searched
// recursively for *.yaml, *.yml and *.json, or "-" for stdin) into a new
// snapshot with the default options. See FileOptions.Load.
func LoadFiles(ctx context.Context, paths []string, stdin io.Reader) (*Snapshot, error) {
	return FileOptions{}.Load(ctx, paths, stdin)
}

// Load reads manifests from paths. Files are streamed: documents (and
// the items of Lists) are cut out one at a time and decoded on all CPUs,
// so memory holds a few documents, not the input. Every object keeps its
// file and line. A document that cannot be read, or that is not a
// Kubernetes object, becomes a Diagnostic in the snapshot; the error
// return is for what stops the load (a path that cannot be read, a
// cancelled context).
func (o FileOptions) Load(ctx context.Context, paths []string, stdin io.Reader) (*Snapshot, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.MaxDocument <= 0 {
		o.MaxDocument = MaxDocument
	}
	var files []string
	for _, p := range paths {
		if p == Stdin {
			files = append(files, Stdin)
			continue
		}
		fs, err := expand(p)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}

	s := New()
	if !o.KeepAllPods {
		s.SlimPods()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &pipeline{s: s, max: o.MaxDocument, work: make(chan doc, 4*o.Workers)}
	p.budget.cond = sync.NewCond(&p.budget.mu)
	p.budget.left = 2*o.MaxDocument + 1
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range p.work {
				if ctx.Err() == nil {
					p.decode(d)
				}
				p.release(d.cost)
				p.recycle(d)
			}
		}()
	}
	err := p.readAll(ctx, files, stdin)
	close(p.work)
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	s.DropUnreadPods()
	sortDiagnostics(s.Diagnostics)
	s.Sort()
	// Two kubeadm ClusterConfigurations: the checks use the first in the
	// input; every other one is a warning, so the choice is visible.
	if len(s.ClusterConfigs) > 1 {
		first := s.ClusterConfigs[0].Source
		for _, cc := range s.ClusterConfigs[1:] {
			s.Diagnostics = append(s.Diagnostics, Diagnostic{Severity: finding.Warning, File: cc.Source.File, Line: cc.Source.Line,
				Message: fmt.Sprintf("another kubeadm ClusterConfiguration; the checks use the first one, at %s:%d", first.File, first.Line),
				Fix:     "lint one cluster's configuration at a time", order: cc.Source.order})
		}
		sortDiagnostics(s.Diagnostics)
	}
	return s, nil
}

func sortDiagnostics(ds []Diagnostic) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.order != b.order {
			return a.order < b.order
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Message < b.Message
	})
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

// doc is one document (or List item) cut out of a file.
type doc struct {
	order    int // place in the input
	file     string
	line     int // line of the document's first content line
	template string
	data     []byte
	json     bool
	// lines maps a line of a YAML document's data to the file.
	lines manifest.LineMap
	diag  *Diagnostic // a problem found while cutting (too large, JSON syntax)
	cost  int         // bytes held against the budget
	// buf is data's storage when it came from the pipeline's pool.
	buf *[]byte
}

// fileLine maps line n (1-based) of a YAML document's data to a line of
// the file.
func (d doc) fileLine(n int) int {
	return d.lines.Line(n)
}

// pipeline carries documents from the reader to the decoding workers,
// holding at most a budget of bytes in flight.
type pipeline struct {
	s     *Snapshot
	max   int
	work  chan doc
	order int
	// aliases bounds what YAML aliases expand to, per document and over
	// the whole input; the reader charges documents in the input's order.
	aliases manifest.AliasBudget

	budget struct {
		mu   sync.Mutex
		cond *sync.Cond
		left int
	}

	// Storage reused from one document to the next: the cut documents'
	// bytes (*[]byte) and the workers' converters (*manifest.Converter).
	// Nothing decoded keeps a reference into either: the decoders copy
	// what they keep.
	bufs, converters sync.Pool
}

// maxPooled is the largest document whose storage is reused.
const maxPooled = 64 << 10

// copyDoc returns d with a copy of data in storage from the pool.
func (p *pipeline) copyDoc(d doc, data []byte) doc {
	if len(data) > maxPooled {
		d.data = bytes.Clone(data)
		return d
	}
	bp, _ := p.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	*bp = append((*bp)[:0], data...)
	d.data, d.buf = *bp, bp
	return d
}

// recycle returns a decoded document's storage to the pool.
func (p *pipeline) recycle(d doc) {
	if d.buf != nil && cap(*d.buf) <= maxPooled {
		p.bufs.Put(d.buf)
	}
}

// send hands d to the workers once its bytes fit the budget.
func (p *pipeline) send(ctx context.Context, d doc) error {
	d.order = p.order
	p.order++
	d.cost = len(d.data)
	p.budget.mu.Lock()
	for p.budget.left < d.cost && ctx.Err() == nil {
		p.budget.cond.Wait()
	}
	p.budget.left -= d.cost
	p.budget.mu.Unlock()
	select {
	case p.work <- d:
		return nil
	case <-ctx.Done():
		p.release(d.cost)
		return ctx.Err()
	}
}

func (p *pipeline) release(n int) {
	p.budget.mu.Lock()
	p.budget.left += n
	p.budget.mu.Unlock()
	p.budget.cond.Broadcast()
}

func (p *pipeline) readAll(ctx context.Context, files []string, stdin io.Reader) error {
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f == Stdin {
			if stdin == nil {
				return errors.New("read stdin: no standard input")
			}
			if err := p.readStream(ctx, "<stdin>", stdin); err != nil {
				return err
			}
			continue
		}
		if err := p.readFile(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

func (p *pipeline) readFile(ctx context.Context, name string) error {
	fh, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	defer fh.Close()
	return p.readStream(ctx, name, fh)
}

// readError marks an I/O error of the underlying reader, as opposed to a
// problem with the text.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }
func (e readError) Unwrap() error { return e.err }

// readStream cuts one file (or stdin) into documents: JSON when its first
// byte is '{' or '[', otherwise multi-document YAML.
func (p *pipeline) readStream(ctx context.Context, name string, r io.Reader) error {
	br := bufio.NewReaderSize(&ioReader{r: r}, 64<<10)
	first, err := firstByte(br)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if first == '{' || first == '[' {
		err = p.readJSON(ctx, name, br)
	} else {
		err = p.readYAML(ctx, name, br)
	}
	var re readError
	if errors.As(err, &re) {
		return fmt.Errorf("read %s: %w", name, re.err)
	}
	return err
}

// ioReader tags errors of the underlying reader.
type ioReader struct{ r io.Reader }

func (r *ioReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if err != nil && err != io.EOF {
		err = readError{err}
	}
	return n, err
}

// firstByte peeks the first byte that is not white space, after a UTF-8
// byte order mark, which it drops (0 for an empty stream, or one that
// starts with more white space than the buffer holds).
func firstByte(br *bufio.Reader) (byte, error) {
	if b, _ := br.Peek(3); len(b) == 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		_, _ = br.Discard(3)
	}
	for n := 1; n <= br.Size(); n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			if err == io.EOF {
				return 0, nil
			}
			return 0, err
		}
		switch c := b[n-1]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c, nil
		}
	}
	return 0, nil
}

// tooLarge is the diagnostic for a document over the cap.
func tooLarge(file string, line, max int) *Diagnostic {
	return &Diagnostic{Severity: finding.Error, File: file, Line: line,
		Message: fmt.Sprintf("document is larger than %s, the most lint reads in one document; it was skipped", sizeString(max)),
		Fix:     "split it into several documents (--- lines); the items of a List are read one by one"}
}

func sizeString(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
