package preflight

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

func FuzzParse(f *testing.F) {
	for _, name := range []string{"linux-ubuntu-26.04.txt", "windows-server-2025.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data), name == "windows-server-2025.txt")
	}
	f.Add(wire(testMarker, "### swaps\nFilename\n\n### tcp\n 0: :::: 0A\n"), false)
	f.Add("ID=\"unterminated\nVERSION_ID='x'\n=\n", false)
	f.Fuzz(func(t *testing.T, out string, windows bool) {
		h := engine.Host{Name: "h", Role: engine.RoleWorker, OS: engine.Linux}
		if windows {
			h.OS = engine.Windows
		}
		fa, err := Parse(h, out, testMarker) // must not panic
		if err != nil {
			return
		}
		_ = CheckHost(fa, h, labExpect)
		_ = CheckCluster([]*Facts{fa, fa})
	})
}

func FuzzParseOSRelease(f *testing.F) {
	f.Add(`PRETTY_NAME="Ubuntu 26.04 LTS"` + "\nID=ubuntu\nVERSION_ID=\"26.04\"\nNAME=\"a \\\"q\\\" \\\\ b\"\n# c\n")
	f.Add("=\n\"\n'a'\nX='\n")
	f.Fuzz(func(t *testing.T, s string) {
		_ = ParseOSRelease(s)
	})
}
