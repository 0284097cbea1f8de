package spec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
)

// typesSource is types.go itself: the field docs become the schema's
// descriptions, so the binary carries them without its source tree.
//
//go:embed types.go
var typesSource []byte

// Limits shared by validation and the JSON Schema.
const (
	MinBlockSize = 20
	MaxBlockSize = 32
	MinMTU       = 1280
	MaxMTU       = 9000
	MaxNodeName  = 63 // a DNS label
	// MaxWindowsNodeName is the NetBIOS computer name limit.
	MaxWindowsNodeName = 15
	// MaxNodes is the largest cluster Kubernetes supports (its
	// scalability thresholds: 5,000 nodes).
	MaxNodes = 5000
)

// dnsLabelPattern is k8s.io/apimachinery's IsDNS1123Label as a JSON Schema
// pattern (with MaxNodeName as maxLength).
const dnsLabelPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`

// enums are the fields restricted to a fixed list of values, by path (`[]`
// stands for any list index). Validation (S106, S302, S603, S702) and the
// JSON Schema both read this one list.
func enums() map[string][]string {
	var builds []string
	for _, r := range WindowsReleases() {
		builds = append(builds, r.Build)
	}
	return map[string][]string{
		"spec.network.configure":     {NetworkCheck, NetworkNetplan, NetworkSystemdNetworkd},
		"spec.packages.source":       {SourceUpstream, SourceBundle},
		"spec.calico.linuxDataplane": {"Nftables", "Iptables", "BPF"},
		"spec.calico.encapsulation":  {"VXLAN", "VXLANCrossSubnet", "IPIP", "IPIPCrossSubnet", "None"},
		"spec.calico.bgp":            {"Enabled", "Disabled"},
		"spec.kubeProxy.mode":        {"nftables", "iptables", "ipvs"},
		"spec.nodes[].role":          {RoleControlPlane, RoleWorker},
		"spec.nodes[].os":            {OSLinux, OSWindows},
		"spec.nodes[].windows.build": builds,
		// S302 checks these too.
		"spec.calico.checkedWindowsBuilds[]": builds,
	}
}

// schemaRanges are the integer fields with an inclusive range.
func schemaRanges() map[string][2]int {
	return map[string][2]int{
		"spec.network.blockSize": {MinBlockSize, MaxBlockSize},
		"spec.network.mtu":       {MinMTU, MaxMTU},
		"spec.nodes[].ssh.port":  {1, 65535},
	}
}

// schemaRequired are the fields without a default that validation requires,
// by the path of the object holding them.
func schemaRequired() map[string][]string {
	return map[string][]string{
		"":                          {"apiVersion", "kind", "metadata", "spec"},
		"metadata":                  {"name"},
		"spec":                      {"controlPlaneEndpoint", "network", "nodes"},
		"spec.network":              {"nodeCIDR", "gateway", "dnsServers", "podCIDR"},
		"spec.nodes[]":              {"name", "address"},
		"spec.addons.metricsServer": {"version"},
		"spec.addons.certManager":   {"version"},
	}
}

// noDefault are fields SetDefaults fills from other fields, so they have no
// single default to show (their descriptions say how they are derived).
var noDefault = map[string]bool{
	"spec.crictl.version":   true, // the Kubernetes minor
	"spec.nodes[].ssh.user": true, // root on Linux, Administrator on Windows
}

// jsonSchema is the subset of JSON Schema (draft 2020-12) the spec needs.
// Its field order is the output order.
type jsonSchema struct {
	Schema               string                 `json:"$schema,omitempty"`
	Title                string                 `json:"title,omitempty"`
	Description          string                 `json:"description,omitempty"`
	Type                 string                 `json:"type,omitempty"`
	Const                string                 `json:"const,omitempty"`
	Enum                 []string               `json:"enum,omitempty"`
	Default              any                    `json:"default,omitempty"`
	Pattern              string                 `json:"pattern,omitempty"`
	MaxLength            *int                   `json:"maxLength,omitempty"`
	Minimum              *int                   `json:"minimum,omitempty"`
	Maximum              *int                   `json:"maximum,omitempty"`
	MinItems             *int                   `json:"minItems,omitempty"`
	MaxItems             *int                   `json:"maxItems,omitempty"`
	Items                *jsonSchema            `json:"items,omitempty"`
	Properties           map[string]*jsonSchema `json:"properties,omitempty"`
	Required             []string               `json:"required,omitempty"`
	AdditionalProperties *bool                  `json:"additionalProperties,omitempty"`
	If                   *jsonSchema            `json:"if,omitempty"`
	Then                 *jsonSchema            `json:"then,omitempty"`
}

// Schema returns the JSON Schema (draft 2020-12) of a cluster spec,
// generated from the Go types: the YAML field names, the field docs as
// descriptions, the enums, ranges and required fields validation uses, and
// the defaults SetDefaults applies. Unknown fields are refused, as the
// loader refuses them. The output is deterministic and ends in a newline.
func Schema() ([]byte, error) {
	docs, err := fieldDocs()
	if err != nil {
		return nil, err
	}
	g := &schemaGen{docs: docs, enums: enums(), ranges: schemaRanges(), required: schemaRequired(), defaults: defaultValues()}
	root := g.gen(reflect.TypeFor[Cluster](), "")
	root.Schema = "https://json-schema.org/draft/2020-12/schema"
	root.Title = APIVersion + " " + Kind
	root.Description = docs["Cluster"]
	if len(g.unused()) > 0 {
		return nil, fmt.Errorf("JSON Schema: rules name fields the types do not have: %s", strings.Join(g.unused(), ", "))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("JSON Schema: %w", err)
	}
	return buf.Bytes(), nil
}

type schemaGen struct {
	docs     map[string]string
	enums    map[string][]string
	ranges   map[string][2]int
	required map[string][]string
	defaults map[string]any
	used     map[string]bool
}

func (g *schemaGen) use(path string) {
	if g.used == nil {
		g.used = map[string]bool{}
	}
	g.used[path] = true
}

// unused lists the paths of the rule tables that no field matched: a
// renamed field must not silently lose its rule.
func (g *schemaGen) unused() []string {
	var out []string
	for _, m := range []map[string]bool{keys(g.enums), keys(g.ranges), keys(g.required)} {
		for p := range m {
			if !g.used[p] {
				out = append(out, p)
			}
		}
	}
	sortStrings(out)
	return out
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func ptr(i int) *int { return &i }

func (g *schemaGen) gen(t reflect.Type, path string) *jsonSchema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s := &jsonSchema{}
	switch t.Kind() {
	case reflect.Struct:
		s.Type = "object"
		s.Properties = map[string]*jsonSchema{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			fp := join(path, name)
			p := g.gen(f.Type, fp)
			doc := g.docs[t.Name()+"."+f.Name]
			if rest, ok := strings.CutPrefix(doc, f.Name+" "); ok {
				doc = name + " " + rest
			}
			p.Description = doc
			s.Properties[name] = p
		}
		if req, ok := g.required[path]; ok {
			g.use(path)
			s.Required = req
		}
		s.AdditionalProperties = new(bool)
	case reflect.Slice:
		s.Type = "array"
		s.Items = g.gen(t.Elem(), path+"[]")
		if path == "spec.network.dnsServers" || path == "spec.nodes" {
			s.MinItems = ptr(1)
		}
		if path == "spec.nodes" {
			s.MaxItems = ptr(MaxNodes)
		}
	case reflect.String:
		s.Type = "string"
	case reflect.Int:
		s.Type = "integer"
	case reflect.Bool:
		s.Type = "boolean"
	}
	if e, ok := g.enums[path]; ok {
		g.use(path)
		s.Enum = e
	}
	if r, ok := g.ranges[path]; ok {
		g.use(path)
		s.Minimum, s.Maximum = ptr(r[0]), ptr(r[1])
	}
	if d, ok := g.defaults[path]; ok {
		s.Default = d
	}
	switch path {
	case "apiVersion":
		s.Const = APIVersion
	case "kind":
		s.Const = Kind
	case "metadata.name", "spec.nodes[].name":
		s.Pattern, s.MaxLength = dnsLabelPattern, ptr(MaxNodeName)
	case "spec.nodes[].ssh.user":
		s.Pattern = windowsAccountPattern
	case "spec.nodes[]":
		// S301: a Windows node's name is its computer name.
		s.If = &jsonSchema{Properties: map[string]*jsonSchema{"os": {Const: OSWindows}}, Required: []string{"os"}}
		s.Then = &jsonSchema{Properties: map[string]*jsonSchema{"name": {MaxLength: ptr(MaxWindowsNodeName)}}}
	}
	return s
}

// defaultValues are the values SetDefaults gives an empty spec, by path:
// one Linux node, and a Windows node for the Windows-only fields.
func defaultValues() map[string]any {
	out := map[string]any{}
	for _, os := range []string{"", OSWindows} {
		c := Cluster{Spec: ClusterSpec{Nodes: []Node{{OS: os}}}}
		SetDefaults(&c)
		collectDefaults(reflect.ValueOf(c), "", out, os != "")
	}
	for p := range noDefault {
		delete(out, p)
	}
	return out
}

// collectDefaults records the non-zero scalars under v. A set value given
// by the sample itself (the Windows sample's os) is not a default: with
// onlyNew, only paths not yet seen are added.
func collectDefaults(v reflect.Value, path string, out map[string]any, onlyNew bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			collectDefaults(v.Elem(), path, out, onlyNew)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			collectDefaults(v.Field(i), join(path, name), out, onlyNew)
		}
	case reflect.Slice:
		if v.Len() > 0 && v.Type().Elem().Kind() == reflect.Struct {
			collectDefaults(v.Index(0), path+"[]", out, onlyNew)
		}
	case reflect.String, reflect.Int, reflect.Bool:
		if v.IsZero() {
			return
		}
		if _, seen := out[path]; onlyNew && seen {
			return
		}
		out[path] = v.Interface()
	}
}

// fieldDocs reads the doc comments of types.go: "Type" and "Type.Field" to
// the comment's text on one line.
func fieldDocs() (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", typesSource, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("reading the spec's field docs: %w", err)
	}
	docs := map[string]string{}
	oneLine := func(cg *ast.CommentGroup) string { return strings.Join(strings.Fields(cg.Text()), " ") }
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, sp := range gd.Specs {
			ts := sp.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			doc := ts.Doc
			if doc == nil {
				doc = gd.Doc
			}
			if doc != nil {
				docs[ts.Name.Name] = oneLine(doc)
			}
			for _, fl := range st.Fields.List {
				if fl.Doc == nil {
					continue
				}
				for _, n := range fl.Names {
					docs[ts.Name.Name+"."+n.Name] = oneLine(fl.Doc)
				}
			}
		}
	}
	return docs, nil
}
