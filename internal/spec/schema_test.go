package spec

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

var updateSchema = flag.Bool("update", false, "rewrite docs/cluster.schema.json from the Go types")

const schemaFile = "../../docs/cluster.schema.json"

// TestSchemaFileIsCurrent: the committed docs/cluster.schema.json is what
// the code generates (go test ./internal/spec -run SchemaFile -update).
func TestSchemaFileIsCurrent(t *testing.T) {
	got, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Schema()
	if err != nil || !bytes.Equal(got, again) {
		t.Fatalf("Schema is not deterministic (err %v)", err)
	}
	if *updateSchema {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/spec -run SchemaFile -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/cluster.schema.json drifted from the spec types; run go test ./internal/spec -run SchemaFile -update")
	}
}

// TestSchemaContent: every field has a description, and the enums,
// defaults and limits are the ones validation and SetDefaults use.
func TestSchemaContent(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	props := map[string]map[string]any{}
	var walk func(n map[string]any, path string)
	walk = func(n map[string]any, path string) {
		if p, ok := n["properties"].(map[string]any); ok {
			for k, v := range p {
				child := v.(map[string]any)
				props[join(path, k)] = child
				walk(child, join(path, k))
			}
		}
		if it, ok := n["items"].(map[string]any); ok && it["properties"] != nil {
			props[path+"[]"] = it
			walk(it, path+"[]")
		}
	}
	walk(root, "")
	if len(props) < 50 {
		t.Fatalf("only %d properties in the schema", len(props))
	}
	for p, s := range props {
		if strings.HasSuffix(p, "[]") {
			continue // a list's items: the list has the description
		}
		if d, _ := s["description"].(string); d == "" {
			t.Errorf("%s has no description (give the Go field a doc comment)", p)
		}
	}
	for _, c := range []struct {
		path, key string
		want      any
	}{
		{"spec.calico.linuxDataplane", "default", DefaultLinuxDataplane},
		{"spec.calico.linuxDataplane", "enum", []any{"Nftables", "Iptables", "BPF"}},
		{"spec.calico.natOutgoing", "default", true},
		{"spec.network.blockSize", "default", float64(DefaultBlockSize)},
		{"spec.network.blockSize", "minimum", float64(MinBlockSize)},
		{"spec.network.mtu", "maximum", float64(MaxMTU)},
		{"spec.nodes[].ssh.port", "default", float64(DefaultSSHPort)},
		{"spec.nodes[].windows.build", "default", DefaultWindowsBuild},
		{"spec.nodes[].windows.build", "enum", []any{"10.0.17763", "10.0.20348", "10.0.26100"}},
		{"spec.packages.source", "enum", []any{SourceUpstream, SourceBundle}},
		{"spec.kubernetesVersion", "description", "kubernetesVersion is the kubeadm/kubelet version, with a leading v."},
		{"spec.crictl.version", "default", nil},   // derived from kubernetesVersion
		{"spec.nodes[].ssh.user", "default", nil}, // depends on the OS
		{"apiVersion", "const", APIVersion},
	} {
		got := props[c.path][c.key]
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(c.want)
		if string(gj) != string(wj) {
			t.Errorf("%s %s = %s, want %s", c.path, c.key, gj, wj)
		}
	}
	if root["additionalProperties"] != false || props["spec.nodes[]"]["additionalProperties"] != false {
		t.Errorf("unknown fields must be refused, as the loader refuses them")
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("cluster.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("cluster.schema.json") // also checks it against the draft 2020-12 meta-schema
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// schemaCheck validates a YAML spec against the schema; a document that is
// not even YAML data (a duplicate key) counts as refused.
func schemaCheck(s *jsonschema.Schema, data []byte) error {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// schemaExpresses says whether the schema can see the problem a diagnostic
// reports: a field-level rule (shape, enum, range, pattern, required
// field), not a relation between fields or a parsed value (CIDR overlap,
// addresses inside networks).
func schemaExpresses(d Diagnostic) bool {
	if strings.HasPrefix(d.Message, "is required") {
		return true
	}
	switch d.Rule {
	case "S001", "S002", "S105", "S108", "S110", "S301", "S302":
		return true
	case "S201":
		return strings.Contains(d.Message, "is outside")
	case "S106":
		// ssh.user: the schema has one pattern for both OSes, a Windows
		// account name (a POSIX user name is one too).
		return strings.HasSuffix(d.Path, ".role") || strings.HasSuffix(d.Path, ".os") || strings.HasSuffix(d.Path, ".ssh.port") ||
			(strings.HasSuffix(d.Path, ".ssh.user") && !strings.Contains(d.Message, "only for a Windows node"))
	case "S603", "S702":
		return strings.Contains(d.Message, "is not one of")
	}
	return false
}

// agree checks the schema against the loader on one spec: the schema
// refuses it if the loader reports an error the schema can express, and
// accepts it if the loader reports none (the schema is never stricter).
func agree(t *testing.T, s *jsonschema.Schema, name string, data []byte, r *Result) {
	t.Helper()
	var expressible []string
	for _, d := range r.Diagnostics.Errors() {
		if schemaExpresses(d) {
			expressible = append(expressible, d.String())
		}
	}
	err := schemaCheck(s, data)
	switch {
	case len(expressible) > 0 && err == nil:
		t.Errorf("%s: the schema accepts it, but the loader reports:\n  %s", name, strings.Join(expressible, "\n  "))
	case len(expressible) == 0 && err != nil:
		t.Errorf("%s: the schema refuses it, but the loader reports no error it could express:\n%v\nloader:\n%s", name, err, diagText(r.Diagnostics))
	}
}

var clusterDoc = regexp.MustCompile(`(?m)^apiVersion: hybridctl\.dev/v1alpha1\s*$`)

// TestSchemaAcceptsEverySpec validates every cluster spec in the repository
// (examples, testdata of every package) against the schema, and checks it
// agrees with the loader on each.
func TestSchemaAcceptsEverySpec(t *testing.T) {
	s := compileSchema(t)
	valid, refused := 0, 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "third_party" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !clusterDoc.Match(data) || !bytes.Contains(data, []byte("\nkind: Cluster\n")) {
			return nil
		}
		r, err := LoadFile(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, s, path, data, r)
		if r.Err() == nil {
			valid++
		} else if schemaCheck(s, data) != nil {
			refused++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// examples/ (2), testdata/valid (5), base.yaml, plan's wide.yaml.
	if valid < 9 {
		t.Errorf("only %d valid specs found in the repository", valid)
	}
	if refused < 10 {
		t.Errorf("the schema refused only %d of the invalid fixtures", refused)
	}
	t.Logf("%d valid specs accepted, %d invalid fixtures refused by the schema", valid, refused)
}

// TestSchemaAgreesWithRules runs the boundary cases of every limit through
// the schema: both sides of each limit it can express, and nothing refused
// that the loader accepts.
func TestSchemaAgreesWithRules(t *testing.T) {
	s := compileSchema(t)
	n := 0
	for _, c := range boundaryCases() {
		if explicitDefault(c.edits) {
			continue // documented: the schema wants an unset field omitted
		}
		data := variant(t, c.edits)
		agree(t, s, c.name, data, Parse("cluster.yaml", data))
		n++
	}
	// Near misses the fixtures do not hold.
	for name, edits := range map[string]map[string]any{
		"lowercase os":           {"spec.nodes[1].os": "Linux"},
		"unknown role":           {"spec.nodes[1].role": "master"},
		"bgp yes":                {"spec.calico.bgp": "yes"},
		"block size as string":   {"spec.network.blockSize": "26"},
		"mtu 1279":               {"spec.network.mtu": 1279},
		"mtu 9001":               {"spec.network.mtu": 9001},
		"unknown node field":     {"spec.nodes[1].hostname": "x"},
		"missing apiVersion":     {"apiVersion": nil},
		"wrong kind":             {"kind": "Clusters"},
		"node without address":   {"spec.nodes[1].address": nil},
		"windows build 2016":     {"spec.nodes[3].windows": map[string]any{"build": "10.0.14393"}},
		"network configure dhcp": {"spec.network.configure": "dhcp"},
		"ssh user as an option":  {"spec.nodes[1].ssh": map[string]any{"user": "-oProxyCommand=sh"}},
		"ssh user with a colon":  {"spec.nodes[3].ssh": map[string]any{"user": "a:b"}},
		"no nodes":               {"spec.nodes": []any{}},
	} {
		data := variant(t, edits)
		r := Parse("cluster.yaml", data)
		if r.Err() == nil {
			t.Errorf("%s: the loader accepts it; not a near miss", name)
		}
		if schemaCheck(s, data) == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
		agree(t, s, name, data, r)
		n++
	}
	if n < 60 {
		t.Errorf("only %d cases ran", n)
	}
}

// explicitDefault reports edits that set a field to its zero value, which
// the loader reads as unset and the schema refuses (omit the field).
func explicitDefault(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if explicitDefault(e) {
				return true
			}
		}
	case int:
		return x == 0
	case string:
		return x == ""
	}
	return false
}
