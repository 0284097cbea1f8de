//go:build windows

package termcolor

import (
	"os"

	"golang.org/x/sys/windows"
)

// enableVT turns on the console's virtual terminal processing (Windows 10
// and later), without which a console prints SGR sequences as text; it
// reports whether the console interprets them.
func enableVT(f *os.File) bool {
	h := windows.Handle(f.Fd())
	var mode uint32
	if err := windows.GetConsoleMode(h, &mode); err != nil {
		return false
	}
	if mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0 {
		return true
	}
	return windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) == nil
}
