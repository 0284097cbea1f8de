//go:build !unix && !windows

package atomicfile

import "os"

// renameNoReplace links from as to in root, failing when to exists, then
// removes from.
func renameNoReplace(root *os.Root, _, from, to string) error {
	if err := root.Link(from, to); err != nil {
		return err
	}
	return root.Remove(from)
}
