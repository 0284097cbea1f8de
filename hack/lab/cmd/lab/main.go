// Command lab runs the end-to-end lab (docs/e2e.md): Debian nodes booted by
// systemd-nspawn on a bridge carrying a spec's node network, with DNS, a
// registry and the bundle served from the host. Root and Linux only.
//
//	lab up -f SPEC           make the lab (refuses a spec that does not fit)
//	lab down -f SPEC         remove everything lab up made (idempotent)
//	lab leftovers [-f SPEC]  list what of the lab (or any lab) is still here
//	lab flags -f SPEC [--for apply|reset|upgrade]  the extra flags hybridctl needs
//	lab kubeconfig -f SPEC   the admin kubeconfig's path
//	lab check                what this machine lacks to run the lab
//	lab bundle -f SPEC       lay the built binaries out as the spec's bundle,
//	                         one directory per Kubernetes version
//
// Exit codes: 0 ok; 1 the spec does not fit, leftovers found or something
// missing; 2 usage; 3 could not complete.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hybridctl/hybridctl/hack/lab/artifacts"
	"github.com/hybridctl/hybridctl/hack/lab/hosts"
	"github.com/hybridctl/hybridctl/internal/spec"
)

const usage = `usage: lab COMMAND [flags]

  up -f SPEC              boot the lab for SPEC (root, Linux)
  down -f SPEC            remove everything up made; safe to repeat
  leftovers [-f SPEC]     list what of the lab (default: of any lab) remains
  flags -f SPEC [--for apply|reset|upgrade]
                          print the extra flags hybridctl apply/reset need
  kubeconfig -f SPEC      print the admin kubeconfig's path (once applied)
  check                   print what this machine lacks to run the lab
  push -f SPEC            build and push every image to the running lab's registry (its CA)
  bundle -f SPEC          lay the built binaries out as SPEC's bundle (apply --bundle) and print its path:
                          <cache>/bundles/<spec.kubernetesVersion>, one per version
  podnet -f SPEC          print the lab's pod network manifest, its image in the lab registry
  build | list | path | images | podnet-manifest
                          the artifacts: binaries (Kubernetes v1.37.2 and v1.36.3), images, pod network (docs/e2e.md)

See docs/e2e.md.
`

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func fail(code int, format string, args ...any) error {
	return &exitError{code, fmt.Errorf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err == nil {
		return
	}
	code := 3
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if err.Error() != "" {
		fmt.Fprintln(os.Stderr, "lab:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fail(2, "no command")
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "build", "list", "path", "images", "podnet-manifest":
		// The artifact commands (hack/lab/artifacts, docs/e2e.md).
		err := artifacts.Run(ctx, append([]string{cmd}, args...), stdout, stderr)
		var u artifacts.UsageError
		if errors.As(err, &u) {
			return &exitError{2, err}
		}
		return err
	}
	fs := flag.NewFlagSet("lab "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	specPath := fs.String("f", "", "cluster spec")
	forCmd := fs.String("for", "apply", "with flags: apply or reset")
	registryBin := fs.String("registry-bin", os.Getenv("HYBRIDCTL_LAB_REGISTRY"), "with up: distribution's registry binary (default $HYBRIDCTL_LAB_REGISTRY, else the artifacts cache)")
	if err := fs.Parse(args); err != nil {
		return &exitError{2, errors.New("")}
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	cache, err := cacheDir()
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "lab: "+format+"\n", a...) }
	needSpec := func() error {
		if *specPath == "" {
			return fail(2, "%s needs -f SPEC", cmd)
		}
		return nil
	}

	switch cmd {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "check":
		if m := hosts.Requirements(); len(m) > 0 {
			return fail(1, "the lab cannot run here; missing: %s", strings.Join(m, "; "))
		}
		fmt.Fprintln(stdout, "the lab can run here")
		return nil
	case "up":
		if err := needSpec(); err != nil {
			return err
		}
		lab, err := loadLab(ctx, *specPath, cache, true)
		if err != nil {
			return err
		}
		bin := *registryBin
		if bin == "" {
			bin = defaultRegistryBin(cache)
		}
		if bin == "none" {
			bin = "" // nodes only: for working on the nodes themselves
		} else if _, err := os.Stat(bin); err != nil {
			return fail(3, "the registry binary %s is missing (build the artifacts first, see docs/e2e.md): %v", bin, err)
		}
		err = hosts.Up(ctx, lab, hosts.Options{RegistryBin: bin, Log: logf})
		if errors.Is(err, hosts.ErrUp) {
			return fail(1, "%v", err)
		}
		if err != nil {
			return fmt.Errorf("%w\nlab: what was made stays for a look; `lab down -f %s` removes it", err, *specPath)
		}
		logf("up: %d nodes; hybridctl apply -f %s %s", len(lab.Nodes), *specPath, strings.Join(lab.ApplyFlags(), " "))
		return nil
	case "down":
		if err := needSpec(); err != nil {
			return err
		}
		lab, err := loadLab(ctx, *specPath, cache, false)
		if err != nil {
			return err
		}
		// Down finishes even after a Ctrl-C: a half-removed lab is worse.
		if err := hosts.Down(context.WithoutCancel(ctx), lab, logf); err != nil {
			return err
		}
		if left := hosts.Leftovers(scope(lab, cache)); len(left) > 0 {
			return fail(3, "down left %s", list(left))
		}
		return nil
	case "leftovers":
		sc := hosts.Scope{ClustersDir: filepath.Join(cache, "clusters")}
		if *specPath != "" {
			lab, err := loadLab(ctx, *specPath, cache, false)
			if err != nil {
				return err
			}
			sc = scope(lab, cache)
		}
		left := hosts.Leftovers(sc)
		for _, r := range left {
			fmt.Fprintln(stdout, r)
		}
		if len(left) > 0 {
			return fail(1, "%d leftovers", len(left))
		}
		return nil
	case "flags":
		if err := needSpec(); err != nil {
			return err
		}
		lab, err := loadLab(ctx, *specPath, cache, true)
		if err != nil {
			return err
		}
		switch *forCmd {
		case "apply":
			fmt.Fprintln(stdout, strings.Join(lab.ApplyFlags(), " "))
		case "reset":
			fmt.Fprintln(stdout, strings.Join(lab.Flags(), " "))
		case "upgrade":
			fmt.Fprintln(stdout, strings.Join(lab.UpgradeFlags(), " "))
		default:
			return fail(2, "--for takes apply, reset or upgrade, not %q", *forCmd)
		}
		return nil
	case "push":
		if err := needSpec(); err != nil {
			return err
		}
		lab, err := loadLab(ctx, *specPath, cache, true)
		if err != nil {
			return err
		}
		return artifacts.Run(ctx, []string{"images", "-f", *specPath, "--ca", lab.CACertPath()}, stdout, stderr)
	case "bundle":
		if err := needSpec(); err != nil {
			return err
		}
		lab, err := loadLab(ctx, *specPath, cache, true)
		if err != nil {
			return err
		}
		b, err := artifacts.NewBuilder(stderr)
		if err != nil {
			return err
		}
		if err := b.LayoutBundle(ctx, lab.BundleDir(), lab.Plan); err != nil {
			return err
		}
		// <cache>/bundle (one bundle for every version, an older cache
		// layout) belongs to nothing now: remove it.
		_ = os.RemoveAll(filepath.Join(cache, "bundle"))
		_ = os.Remove(filepath.Join(cache, "bundle.lab-stamp"))
		fmt.Fprintln(stdout, lab.BundleDir())
		return nil
	case "podnet":
		if err := needSpec(); err != nil {
			return err
		}
		lab, err := loadLab(ctx, *specPath, cache, true)
		if err != nil {
			return err
		}
		// The agent reaches the API server at the spec's endpoint (the lab's
		// DNS knows it), not through kube-proxy's Service rules.
		return artifacts.Run(ctx, []string{"podnet-manifest", "--image", lab.Registry() + "/hybridctl-lab/podnet:lab", "--api", lab.APIEndpoint}, stdout, stderr)
	case "kubeconfig":
		if err := needSpec(); err != nil {
			return err
		}
		lab, err := loadLab(ctx, *specPath, cache, true)
		if err != nil {
			return err
		}
		if _, err := os.Stat(lab.KubeconfigPath()); err != nil {
			return fail(1, "no admin kubeconfig yet at %s: run hybridctl apply with `lab flags`", lab.KubeconfigPath())
		}
		fmt.Fprintln(stdout, lab.KubeconfigPath())
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fail(2, "unknown command %q", cmd)
}

// loadLab loads the spec; strict: it must fit the lab. Otherwise (down,
// leftovers) only its name and node names are needed.
func loadLab(ctx context.Context, path, cache string, strict bool) (*hosts.Lab, error) {
	r, err := spec.LoadFile(ctx, path)
	if err != nil {
		return nil, fail(2, "%v", err)
	}
	dir := func(name string) string { return filepath.Join(cache, "clusters", name) }
	if !strict && r.Cluster != nil && r.Cluster.Metadata.Name != "" {
		lab := &hosts.Lab{Name: r.Cluster.Metadata.Name, Dir: dir(r.Cluster.Metadata.Name), CacheDir: cache}
		for _, n := range r.Cluster.Spec.Nodes {
			lab.Nodes = append(lab.Nodes, hosts.Node{Name: n.Name})
		}
		return lab, nil
	}
	if err := r.Err(); err != nil {
		return nil, fail(1, "%v", err)
	}
	lab, err := hosts.FromSpec(r, dir(r.Cluster.Metadata.Name), cache)
	var mf *hosts.MisfitError
	if errors.As(err, &mf) {
		return nil, fail(1, "%v", err)
	}
	return lab, err
}

func scope(lab *hosts.Lab, cache string) hosts.Scope {
	sc := hosts.Scope{ClustersDir: filepath.Join(cache, "clusters"), Name: lab.Name}
	for _, n := range lab.Nodes {
		sc.Machines = append(sc.Machines, n.Name)
	}
	return sc
}

func list(rs []hosts.Resource) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.String())
	}
	return strings.Join(s, ", ")
}

// cacheDir is $HYBRIDCTL_LAB_CACHE, else ~/.cache/hybridctl/lab (or under
// $XDG_CACHE_HOME), as for the artifacts.
func cacheDir() (string, error) {
	if c := os.Getenv("HYBRIDCTL_LAB_CACHE"); c != "" {
		return c, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	return filepath.Join(c, "hybridctl", "lab"), nil
}

// defaultRegistryBin is where the artifacts build puts distribution's
// registry.
func defaultRegistryBin(cache string) string {
	return filepath.Join(cache, "bin", "registry", "registry") // artifacts: bin/<artifact>/<file>
}
