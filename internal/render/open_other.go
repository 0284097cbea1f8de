//go:build !unix

package render

const openNonblock = 0
