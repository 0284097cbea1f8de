package artifacts

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

// UsageError is a command-line mistake (exit 2).
type UsageError struct{ Msg string }

func (u UsageError) Error() string { return u.Msg }

// Usage lists the artifact commands; hack/lab/lab dispatches them here.
const Usage = `artifact commands (hack/lab/artifacts):
  build [NAME...]                          build (or reuse from the cache) every artifact, or the named ones
                                           (each Kubernetes release's: kubernetes, etcd, coredns for v1.37.2;
                                           kubernetes-v1.36.3, etcd-v1.36.3, coredns-v1.14.2 for v1.36.3)
  list                                     the artifacts: name, version, Kubernetes release ("-": any), files, purpose
  path [--kubernetes-version V] FILE       print a built binary's path (registry, containerd, kubelet, ...),
                                           of release V where it depends on it (default ` + KubernetesVersion + `)
  images -f SPEC [--registry HOST:PORT] [--ca FILE]
                                           build every Linux image plan lists for SPEC, plus
                                           hybridctl-lab/{hybridctl,podnet}:lab, and push them;
                                           prints "REFERENCE DIGEST" per image
  podnet-manifest --image REF [--api HOST:PORT] [--mtu N]
                                           print the lab's pod network manifest
cache: $HYBRIDCTL_LAB_CACHE, else <user cache dir>/hybridctl/lab
`

// Run runs one artifact command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return UsageError{"no command\n" + Usage}
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	parse := func() error {
		if err := fs.Parse(args[1:]); err != nil {
			return UsageError{err.Error()}
		}
		return nil
	}
	switch args[0] {
	case "build":
		if err := parse(); err != nil {
			return err
		}
		b, err := NewBuilder(stderr)
		if err != nil {
			return err
		}
		return b.Build(ctx, fs.Args()...)
	case "list":
		if err := parse(); err != nil {
			return err
		}
		for _, a := range Artifacts() {
			k := a.Kubernetes()
			if k == "" {
				k = "-"
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\n", a.Name, a.Version, k, strings.Join(a.Files, ","), a.Purpose)
		}
		return nil
	case "path":
		kubernetes := fs.String("kubernetes-version", KubernetesVersion, "the Kubernetes release ("+strings.Join(KubernetesVersions(), ", ")+")")
		if err := parse(); err != nil {
			return err
		}
		if _, err := LookupRelease(*kubernetes); err != nil {
			return UsageError{err.Error()}
		}
		if fs.NArg() != 1 {
			return UsageError{"path takes one file name\n" + Usage}
		}
		b, err := NewBuilder(stderr)
		if err != nil {
			return err
		}
		p, err := b.PathFor(ctx, *kubernetes, fs.Arg(0))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, p)
		return err
	case "images":
		spec := fs.String("f", "", "the cluster spec")
		var opts PushOptions
		fs.StringVar(&opts.Registry, "registry", "", "push to HOST:PORT instead of the spec's images.registry")
		fs.StringVar(&opts.CA, "ca", "", "PEM file of the CA that signs the registry's certificate")
		if err := parse(); err != nil {
			return err
		}
		if *spec == "" || fs.NArg() != 0 {
			return UsageError{"images takes -f SPEC and no arguments\n" + Usage}
		}
		b, err := NewBuilder(stderr)
		if err != nil {
			return err
		}
		pushed, err := b.PushImages(ctx, *spec, opts)
		if err != nil {
			return err
		}
		for _, p := range pushed {
			fmt.Fprintf(stdout, "%s %s\n", p.Ref, p.Digest)
		}
		return nil
	case "podnet-manifest":
		image := fs.String("image", "", "the podnet image reference")
		api := fs.String("api", "", "HOST:PORT of the API server (default: the kubernetes Service)")
		mtu := fs.Int("mtu", 0, "the pod interfaces' MTU (0: the bridge plugin's default)")
		if err := parse(); err != nil {
			return err
		}
		if *image == "" || fs.NArg() != 0 {
			return UsageError{"podnet-manifest takes --image REF\n" + Usage}
		}
		m, err := PodNetworkManifest(*image, *api, *mtu)
		if err != nil {
			return UsageError{err.Error()}
		}
		_, err = stdout.Write(m)
		return err
	default:
		return UsageError{fmt.Sprintf("unknown command %q\n%s", args[0], Usage)}
	}
}
