//go:build !windows

package termcolor

import "os"

// enableVT: Unix terminals interpret SGR sequences.
func enableVT(*os.File) bool { return true }
