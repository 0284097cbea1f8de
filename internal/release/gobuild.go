package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// VersionPackage is the package whose variables the linker stamps.
const VersionPackage = "github.com/hybridctl/hybridctl/internal/version"

// MainPackage is the command a release ships.
const MainPackage = "./cmd/hybridctl"

// buildEnv is the environment of go build for p: the caller's, with every
// variable that changes the output fixed. CGO is off (static binaries, no C
// toolchain needed to cross-compile); the architecture levels are Go's
// defaults whatever the caller set; GOFLAGS and GOEXPERIMENT are cleared.
func buildEnv(p Platform) []string {
	fixed := map[string]string{
		"GOOS": p.OS, "GOARCH": p.Arch, "CGO_ENABLED": "0",
		"GOAMD64": "v1", "GOARM64": "v8.0", "GOFLAGS": "", "GOEXPERIMENT": "", "GOFIPS140": "off",
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := fixed[k]; ok {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range []string{"GOOS", "GOARCH", "CGO_ENABLED", "GOAMD64", "GOARM64", "GOFLAGS", "GOEXPERIMENT", "GOFIPS140"} {
		env = append(env, k+"="+fixed[k])
	}
	return env
}

// buildArgs are go build's arguments: paths trimmed, no VCS stamp (the
// version package carries the commit), symbols and DWARF stripped, an empty
// Go build ID (so no content hash of the build's inputs depends on where
// it ran), and the version stamped.
func buildArgs(src Source, out string) []string {
	ldflags := []string{
		"-s", "-w", "-buildid=",
		"-X", VersionPackage + ".version=" + src.Version,
		"-X", VersionPackage + ".commit=" + src.Commit,
		"-X", VersionPackage + ".date=" + src.Date(),
	}
	return []string{"build", "-trimpath", "-buildvcs=false", "-mod=readonly", "-ldflags", strings.Join(ldflags, " "), "-o", out, MainPackage}
}

// buildBinary builds hybridctl for p into out.
func buildBinary(ctx context.Context, src Source, p Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", buildArgs(src, out)...)
	cmd.Dir = src.Dir
	cmd.Env = buildEnv(p)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %w\n%s", p, err, strings.TrimSpace(errb.String()))
	}
	return nil
}
