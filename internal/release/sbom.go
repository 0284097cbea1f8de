package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/uuid"
)

// SBOMTool is the SBOM generator, run with go run: CycloneDX's own tool,
// reading the module graph the Go linker recorded in the binary (go version
// -m), so the SBOM lists exactly the modules, at exactly the versions, that
// are in it.
const SBOMTool = "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0"

// sbomSerial is the SBOM's serial number: a name-based UUID of the
// binary's sha256, so the same binary gets the same SBOM and different
// binaries different serial numbers.
func sbomSerial(binary []byte) string {
	sum := sha256.Sum256(binary)
	return uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "https://github.com/hybridctl/hybridctl/sbom/%x", sum)).String()
}

// installSBOMTool builds the SBOM generator (a module@version) for this
// machine into dir and returns its path. It is built once and run once per
// platform: the tool takes the package URLs' goos and goarch from its own
// environment's GOOS and GOARCH, which go run would also use to build it.
func installSBOMTool(ctx context.Context, tool, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "install", tool)
	// go install of a module@version ignores the current module; GOFLAGS
	// could still change it, and a GOOS or GOARCH of the caller's would
	// make a binary this machine cannot run.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOBIN="+dir, "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the SBOM generator %s: %w\n%s", tool, err, strings.TrimSpace(errb.String()))
	}
	name, _, _ := strings.Cut(path.Base(tool), "@")
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(dir, name), nil
}

// sbom writes out, a CycloneDX JSON SBOM of the binary at bin, built for
// p: its Go modules and the standard library, with version as the main
// component's version. No timestamp: the same binary gives the same bytes.
func sbom(ctx context.Context, tool, bin string, p Platform, version, out string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	args := []string{"bin", "-json", "-std", "-notimestamp", "-serial", sbomSerial(data), "-version", version, "-output", out, bin}
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOOS="+p.OS, "GOARCH="+p.Arch)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("SBOM of %s (%s %s): %w\n%s", bin, tool, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return nil
}
