package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/manifest"
)

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decode turns one document into objects or a diagnostic. It runs on the
// workers, so it only adds to the snapshot under its lock.
func (p *pipeline) decode(d doc) {
	diag := func(sev finding.Severity, line int, msg, fix string) {
		p.s.addDiagnostic(Diagnostic{Severity: sev, File: d.file, Line: line, Message: msg, Fix: fix, order: d.order})
	}
	if d.diag != nil {
		dg := *d.diag
		dg.order = d.order
		p.s.addDiagnostic(dg)
		return
	}
	data := d.data
	var top manifest.TypeMeta
	if !d.json {
		c, _ := p.converters.Get().(*manifest.Converter)
		if c == nil {
			c = new(manifest.Converter)
		}
		defer func() {
			if c.Reusable() {
				p.converters.Put(c)
			}
		}()
		j, meta, err := c.ToJSON(data)
		if err != nil {
			if n, col, ok := manifest.TabIndent(data, err); ok {
				line := d.fileLine(n)
				diag(finding.Error, line, fmt.Sprintf("cannot read this YAML document: a tab character at line %d, column %d: YAML indents with spaces only", line, col),
					"replace the tab with spaces")
				return
			}
			line, msg := d.line, err.Error()
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				n, _ := strconv.Atoi(m[1])
				// yaml.v3 puts an error at the end of the input on the
				// line after the last: the line break the cutter ends
				// every document with may not be in the file.
				if last := bytes.Count(data, []byte{'\n'}); n > last && last > 0 {
					n = last
				}
				line, msg = d.fileLine(n), m[2]
			}
			msg = strings.TrimPrefix(msg, "yaml: ")
			diag(finding.Error, line, "cannot read this YAML document: "+msg, "")
			return
		}
		data, top = j, meta
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return
	}
	if data[0] != '{' {
		what := "a scalar"
		if data[0] == '[' {
			what = "a sequence"
		}
		dg := notObject(d.file, d.line, what)
		dg.order = d.order
		p.s.addDiagnostic(*dg)
		return
	}
	if top.OK && top.Kind != "List" {
		// The fast path read apiVersion and kind, and saw no items.
		p.object(d, data, "", top.APIVersion, top.Kind)
		return
	}
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		diag(finding.Error, d.line, fieldError(data, err).Error(), "")
		return
	}
	if head.Kind == "List" || (strings.HasSuffix(head.Kind, "List") && head.Items != nil) {
		for i, it := range head.Items {
			p.object(d, it, fmt.Sprintf("items[%d]: ", i), "", "")
		}
		return
	}
	p.object(d, data, "", head.APIVersion, head.Kind)
}

// object adds one object (a document, or an item of a List held in one
// document). apiVersion and kind are read from data when empty.
func (p *pipeline) object(d doc, data []byte, where, apiVersion, kind string) {
	diag := func(sev finding.Severity, msg, fix string) {
		p.s.addDiagnostic(Diagnostic{Severity: sev, File: d.file, Line: d.line, Message: where + msg, Fix: fix, order: d.order})
	}
	if apiVersion == "" && kind == "" {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(data, &tm); err != nil {
			diag(finding.Error, "not a Kubernetes object: "+fieldError(data, err).Error(), "")
			return
		}
		apiVersion, kind = tm.APIVersion, tm.Kind
	}
	switch {
	case isKustomize(d.file, apiVersion, data):
		diag(finding.Warning, "a kustomization, not a Kubernetes object: lint does not build it, so what it generates or patches is not checked",
			"lint what kustomize builds: kustomize build "+kustomizeDir(d.file)+" | hybridctl lint -")
		return
	case apiVersion == "" && kind == "":
		diag(finding.Warning, "not a Kubernetes object (no apiVersion or kind); it was not checked",
			"leave this file out of lint's paths, or give the object its apiVersion and kind")
		return
	case apiVersion == "" || kind == "":
		missing := "kind"
		if apiVersion == "" {
			missing = "apiVersion"
		}
		diag(finding.Error, fmt.Sprintf("%s %s has no %s; it was not checked", orUnknown(kind), nameOf(data), missing),
			"add "+missing+" (kubectl refuses the object without it)")
		return
	}
	if err := p.s.AddKind(KindOf(apiVersion, kind), apiVersion, kind, data, Source{File: d.file, Line: d.line, Template: d.template, order: d.order}); err != nil {
		fix := ""
		var te *TypeError
		if errors.As(err, &te) {
			fix = te.Fix()
		}
		diag(finding.Error, fmt.Sprintf("%s %s: %v", kind, nameOf(data), err), fix)
	}
}

// notObject is the warning for a document that is not a mapping.
func notObject(file string, line int, what string) *Diagnostic {
	return &Diagnostic{Severity: finding.Warning, File: file, Line: line,
		Message: "not a Kubernetes object (" + what + ", not a mapping with apiVersion and kind); it was not checked",
		Fix:     "leave this file out of lint's paths"}
}

// isKustomize recognises a kustomization: by its apiVersion, by its file
// name, or by the fields only a kustomization has at the top.
func isKustomize(file, apiVersion string, data []byte) bool {
	if strings.HasPrefix(apiVersion, "kustomize.config.k8s.io/") {
		return true
	}
	switch strings.ToLower(filepath.Base(file)) {
	case "kustomization.yaml", "kustomization.yml", "kustomization":
		return true
	}
	if apiVersion != "" {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return false
	}
	for _, k := range []string{"resources", "bases", "components", "patchesStrategicMerge", "configMapGenerator", "helmCharts"} {
		if _, ok := top[k]; ok {
			return true
		}
	}
	return false
}

func kustomizeDir(file string) string {
	if file == "<stdin>" {
		return "DIR"
	}
	return filepath.Dir(file)
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
