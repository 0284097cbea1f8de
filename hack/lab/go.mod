// Module lab builds and runs the end-to-end lab (docs/e2e.md): the artifacts
// (binaries, images, the bundle) built from the Go module proxy, and the
// hosts (systemd-nspawn nodes on a bridge). It is never imported by the
// product.
module github.com/hybridctl/hybridctl/hack/lab

go 1.26.0

require (
	github.com/google/go-containerregistry v0.22.1
	github.com/vishvananda/netlink v1.3.1
)

require (
	github.com/hybridctl/hybridctl v0.0.0
	github.com/vishvananda/netns v0.0.5
	golang.org/x/crypto v0.54.0
)

require (
	github.com/docker/cli v29.7.2+incompatible // indirect
	github.com/docker/docker-credential-helpers v0.9.3 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/term v0.45.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/apimachinery v0.37.2 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
)

// The lab reads specs with hybridctl's own loader and planner.
replace github.com/hybridctl/hybridctl => ../..
