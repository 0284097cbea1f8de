//go:build !unix

package bundle

const openNonblock = 0
