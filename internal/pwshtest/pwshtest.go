// Package pwshtest parses PowerShell in tests with a real parser: the
// tree-sitter PowerShell grammar (WebAssembly, through web-tree-sitter in
// Node.js), installed by hack/install-deps.sh into
// ~/.cache/hybridctl/tools/npm from hack/pwsh/package-lock.json. It reports
// syntax errors as NAME:LINE:COL and two rules from the Windows review
// (hack/pwsh/parse.cjs): native-under-stop and strict-null-property.
//
// There is no PowerShell on the test machines; this is the check that
// every script hybridctl renders or sends at least parses.
package pwshtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

var decode = transport.DecodePowerShell

// Script is one PowerShell text and the name findings carry (a file path,
// or what sent it).
type Script struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// ErrNoParser is returned when Node.js or the npm packages are missing.
var ErrNoParser = errors.New("the PowerShell parser is not installed: run hack/install-deps.sh (Node.js, npm, then npm ci of hack/pwsh into ~/.cache/hybridctl/tools/npm)")

// toolsDir is where hack/install-deps.sh puts the npm packages.
func toolsDir() (string, error) {
	if d := os.Getenv("HYBRIDCTL_TOOLS"); d != "" {
		return filepath.Join(d, "npm"), nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "hybridctl", "tools", "npm"), nil
}

// parserScript is hack/pwsh/parse.cjs of this repository.
func parserScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "hack", "pwsh", "parse.cjs")
}

// Parse runs the parser over scripts and returns its findings, one line
// each ("NAME:LINE:COL: KIND: message"), in input order.
func Parse(ctx context.Context, scripts []Script) ([]string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, ErrNoParser
	}
	tools, err := toolsDir()
	if err != nil {
		return nil, err
	}
	modules := filepath.Join(tools, "node_modules")
	for _, m := range []string{"web-tree-sitter", "tree-sitter-powershell"} {
		if _, err := os.Stat(filepath.Join(modules, m)); err != nil {
			return nil, fmt.Errorf("%w (%s is missing)", ErrNoParser, filepath.Join(modules, m))
		}
	}
	in, err := json.Marshal(scripts)
	if err != nil {
		return nil, err
	}
	// --liftoff-only: without it V8's optimizing compiler takes minutes on
	// the grammar's 1 MB of WebAssembly; with it a script takes about a second.
	cmd := exec.CommandContext(ctx, node, "--liftoff-only", parserScript())
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("parse.cjs: %w: %s", err, stderr.String())
	}
	var out []string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

// Check parses scripts and fails t for each finding. Without the parser it
// skips under -short and fails otherwise, naming the install step.
func Check(t testing.TB, scripts ...Script) {
	t.Helper()
	findings := Run(t, scripts...)
	for _, f := range findings {
		t.Error(f)
	}
}

// Run parses scripts and returns the findings; a missing parser skips
// under -short and fails otherwise.
func Run(t testing.TB, scripts ...Script) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	findings, err := Parse(ctx, scripts)
	if errors.Is(err, ErrNoParser) && testing.Short() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return findings
}

// Decoded returns the scripts inside the powershell -EncodedCommand lines
// of commands (as an SSH server received them), named "command N"; other
// commands are left out.
func Decoded(t testing.TB, commands []string) []Script {
	t.Helper()
	var out []Script
	for i, c := range commands {
		_, enc, ok := strings.Cut(c, "-EncodedCommand ")
		if !ok {
			continue
		}
		text, err := decode(strings.Fields(enc)[0])
		if err != nil {
			t.Fatalf("command %d: %v", i+1, err)
		}
		out = append(out, Script{Name: fmt.Sprintf("command %d", i+1), Text: text})
	}
	return out
}
