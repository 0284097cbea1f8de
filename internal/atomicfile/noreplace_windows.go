package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// renameNoReplace renames from to to, both names in the directory root
// (at dir), failing with an error that is fs.ErrExist when to exists: one
// MoveFileEx without MOVEFILE_REPLACE_EXISTING, so nothing is left at from
// either way it ends.
func renameNoReplace(_ *os.Root, dir, from, to string) error {
	f, err := windows.UTF16PtrFromString(filepath.Join(dir, from))
	if err != nil {
		return err
	}
	t, err := windows.UTF16PtrFromString(filepath.Join(dir, to))
	if err != nil {
		return err
	}
	if err := windows.MoveFileEx(f, t, windows.MOVEFILE_WRITE_THROUGH); err != nil {
		return &fs.PathError{Op: "rename", Path: filepath.Join(dir, to), Err: err}
	}
	return nil
}
