//go:build unix && !linux

package atomicfile

import "errors"

// openBeneath has no single-call form here: the caller walks.
func openBeneath(int, string) (int, bool) { return -1, false }

// exchangeAt is not available: the caller renames twice.
func exchangeAt(int, string, string) error { return errors.New("no atomic exchange on this OS") }
