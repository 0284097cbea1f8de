package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
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

// sbom writes out, a CycloneDX JSON SBOM of the binary at bin: its Go
// modules and the standard library, with version as the main component's
// version. No timestamp: the same binary gives the same bytes.
func sbom(ctx context.Context, tool, bin, version, out string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	args := []string{"run", tool, "bin", "-json", "-std", "-notimestamp", "-serial", sbomSerial(data), "-version", version, "-output", out, bin}
	cmd := exec.CommandContext(ctx, "go", args...)
	// go run of a module@version ignores the current module; GOFLAGS
	// could still change it.
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("SBOM of %s (go %s): %w\n%s", bin, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return nil
}
