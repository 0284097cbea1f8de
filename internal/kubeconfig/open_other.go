//go:build !unix

package kubeconfig

const openNonblock = 0
