//go:build !unix

package unpriv

import "testing"

// Run reports whether the caller should run the test body itself; outside
// Unix there is no root to drop, so always true.
func Run(t *testing.T) bool { return true }
