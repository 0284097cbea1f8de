// Module lab builds and runs the end-to-end lab (docs/e2e.md): the artifacts
// (binaries, images, the bundle) built from the Go module proxy, and the
// hosts (systemd-nspawn nodes on a bridge). It is never imported by the
// product.
module github.com/hybridctl/hybridctl/hack/lab

go 1.26.0

require github.com/google/go-containerregistry v0.22.1
