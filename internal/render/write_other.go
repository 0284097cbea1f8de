//go:build !linux

package render

import "errors"

// exchange is not available: replaceDir falls back to two renames.
func exchange(a, b string) error { return errors.New("no atomic exchange on this OS") }
