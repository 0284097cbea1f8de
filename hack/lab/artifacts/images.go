package artifacts

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// ImageDef is one image the lab builds. Plan's image references are matched
// to it by their last path element (kube-apiserver in
// 10.0.0.1:5000/kube-apiserver:v1.37.2).
type ImageDef struct {
	Name    string // the last path element of the repository
	Purpose string
	// Binaries are built files put under Dir.
	Binaries []string
	Dir      string
	// Entrypoint, User and Env are the image configuration.
	Entrypoint []string
	User       string
	Env        []string
	// netfilter adds iptables (nft backend) and nft with their libraries,
	// from Debian packages.
	netfilter bool
}

// Extra images the lab pushes beside plan's list, under
// <registry>/hybridctl-lab/<name>:lab.
const (
	ExtraRepository = "hybridctl-lab"
	ExtraTag        = "lab"
)

const defaultPath = "PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"

// Images is the ordered list of images the lab can build.
func Images() []ImageDef {
	k8s := func(name, purpose string) ImageDef {
		// kubeadm's static Pods and kube-proxy's DaemonSet run the command by
		// name (kube-apiserver ...), or by /usr/local/bin path.
		return ImageDef{Name: name, Purpose: purpose, Binaries: []string{name}, Dir: "/usr/local/bin", Env: []string{defaultPath}}
	}
	proxy := k8s("kube-proxy", "kube-proxy (iptables and nftables modes: iptables-nft, nft and /etc/protocols from Debian)")
	proxy.netfilter = true
	return []ImageDef{
		{Name: "pause", Purpose: "the pod sandbox: the lab's pause program", Binaries: []string{"pause"}, Dir: "/",
			Entrypoint: []string{"/pause"}, User: "65535:65535"},
		{Name: "etcd", Purpose: "etcd (kubeadm's static Pod runs etcd by name)", Binaries: []string{"etcd"}, Dir: "/usr/local/bin", Env: []string{defaultPath}},
		k8s("kube-apiserver", "the API server"),
		k8s("kube-controller-manager", "the controller manager"),
		k8s("kube-scheduler", "the scheduler"),
		proxy,
		{Name: "coredns", Purpose: "CoreDNS (kubeadm's Deployment runs /coredns -conf ...)", Binaries: []string{"coredns"}, Dir: "/",
			Entrypoint: []string{"/coredns"}},
		{Name: "hello", Purpose: "the Linux check workload (render's hello) and the e2e's in-pod client", Binaries: []string{"hello"}, Dir: "/",
			Entrypoint: []string{"/hello"}, User: "65532:65532"},
		{Name: "hybridctl", Purpose: "hybridctl itself: render --csr-approver-image (extra: hybridctl-lab/hybridctl:lab)", Binaries: []string{"hybridctl"}, Dir: "/",
			Entrypoint: []string{"/hybridctl"}, User: "65532:65532"},
		{Name: "podnet", Purpose: "the lab's pod network agent (extra: hybridctl-lab/podnet:lab)", Binaries: []string{"podnet"}, Dir: "/",
			Entrypoint: []string{"/podnet"}},
	}
}

// ExtraImages are pushed whatever the spec: they are not in plan's list.
var ExtraImages = []string{"hybridctl", "podnet"}

// LookupImage finds the definition for a repository's last path element.
func LookupImage(name string) (ImageDef, bool) {
	all := Images()
	i := slices.IndexFunc(all, func(d ImageDef) bool { return d.Name == name })
	if i < 0 {
		return ImageDef{}, false
	}
	return all[i], true
}

// baseEntries is the layer every image shares: users, groups, /tmp and the
// resolver's configuration.
func baseEntries() []entry {
	return []entry{
		data("/etc/passwd", 0o644, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"),
		data("/etc/group", 0o644, "root:x:0:\nnonroot:x:65532:\nnogroup:x:65534:\n"),
		data("/etc/nsswitch.conf", 0o644, "hosts: files dns\n"),
		dir("/tmp", os.ModeSticky|0o777),
		dir("/root", 0o700),
		{Path: "/home/nonroot", Mode: os.ModeDir | 0o700, UID: 65532},
	}
}

// BuildImage assembles an image from built binaries, those of the given
// Kubernetes release where they depend on it. It is deterministic: the same
// binaries give the same digest.
func (b *Builder) BuildImage(ctx context.Context, kubernetes string, d ImageDef) (v1.Image, error) {
	base, err := newLayer(baseEntries())
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", d.Name, err)
	}
	layers := []v1.Layer{base}
	if d.netfilter {
		ents, err := b.netfilterEntries(ctx)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", d.Name, err)
		}
		l, err := newLayer(ents)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", d.Name, err)
		}
		layers = append(layers, l)
	}
	var app []entry
	for _, bin := range d.Binaries {
		p, err := b.PathFor(ctx, kubernetes, bin)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", d.Name, err)
		}
		if err := checkStatic(p); err != nil {
			return nil, fmt.Errorf("image %s: %w", d.Name, err)
		}
		app = append(app, file(path.Join(d.Dir, bin), 0o755, p))
	}
	l, err := newLayer(app)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", d.Name, err)
	}
	layers = append(layers, l)
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", d.Name, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", d.Name, err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config.Entrypoint = d.Entrypoint
	cf.Config.User = d.User
	cf.Config.Env = d.Env
	cf.Config.Labels = map[string]string{"org.opencontainers.image.source": "hybridctl hack/lab", "org.opencontainers.image.title": d.Name}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", d.Name, err)
	}
	return img, nil
}

// checkStatic refuses a dynamically linked binary: the images carry no libc
// (except kube-proxy's netfilter layer, which brings its own).
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (build it with CGO_ENABLED=0)", p)
		}
	}
	return nil
}

// netfilterPackages are the Debian packages kube-proxy's image takes
// iptables (nft backend) and nft from, with every library they load, and
// netbase's /etc/protocols and /etc/services.
var netfilterPackages = []string{
	"iptables", "libxtables12", "libip4tc2", "libip6tc2", "libnftnl11", "libmnl0", "libnetfilter-conntrack3", "libnfnetlink0",
	"nftables", "libnftables1", "libjansson4", "libgmp10", "libedit2", "libbsd0", "libmd0", "libtinfo6", "libc6",
	"netbase",
}

// netbaseFiles are the name tables nft reads: without /etc/protocols,
// "nft --json list map" prints a protocol as its number (6, not "tcp"),
// and kube-proxy's nftables mode, which reads its maps back at every full
// resync and matches their keys as text ("10.96.0.1 . tcp . 443"), takes
// each element it finds for a stale one and deletes it: after a restart
// over a populated table, every Service on the node refuses connections
// until its next full resync. Upstream's kube-proxy image (distroless)
// carries both files.
var netbaseFiles = []string{"/etc/protocols", "/etc/services"}

// libDirs are where the dynamic loader looks, in the extracted packages.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"}

// netfilterEntries lays out xtables-nft-multi under the iptables names
// kube-proxy runs, nft, the xtables extension modules, and every shared
// library they need (followed through DT_NEEDED), from Debian's packages.
func (b *Builder) netfilterEntries(ctx context.Context) ([]entry, error) {
	root, err := b.debs(ctx, "netfilter", netfilterPackages)
	if err != nil {
		return nil, err
	}
	var ents []entry
	var elfs []string // image paths whose libraries are still to resolve
	add := func(p string) error {
		ents = append(ents, file(p, 0o755, filepath.Join(root, p)))
		elfs = append(elfs, p)
		return nil
	}
	for _, p := range []string{"/usr/sbin/xtables-nft-multi", "/usr/sbin/nft"} {
		if err := add(p); err != nil {
			return nil, err
		}
	}
	for _, p := range netbaseFiles {
		ents = append(ents, file(p, 0o644, filepath.Join(root, p)))
	}
	for _, n := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore",
		"iptables-nft", "iptables-nft-save", "iptables-nft-restore", "ip6tables-nft", "ip6tables-nft-save", "ip6tables-nft-restore"} {
		ents = append(ents, link("/usr/sbin/"+n, "xtables-nft-multi"))
	}
	mods, err := filepath.Glob(filepath.Join(root, "usr/lib/x86_64-linux-gnu/xtables/*.so"))
	if err != nil || len(mods) == 0 {
		return nil, fmt.Errorf("no xtables modules under %s", root)
	}
	for _, m := range mods {
		if err := add(strings.TrimPrefix(m, root)); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for len(elfs) > 0 {
		p := elfs[0]
		elfs = elfs[1:]
		f, err := elf.Open(filepath.Join(root, p))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		needed, err := f.ImportedLibraries()
		var interp string
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				b := make([]byte, prog.Filesz)
				if _, err := prog.ReadAt(b, 0); err == nil {
					interp = strings.TrimRight(string(b), "\x00")
				}
			}
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		var paths []string
		if interp != "" {
			paths = append(paths, interp)
		}
		for _, lib := range needed {
			found := ""
			for _, d := range libDirs {
				if _, err := os.Lstat(filepath.Join(root, d, lib)); err == nil {
					found = path.Join(d, lib)
					break
				}
			}
			if found == "" {
				return nil, fmt.Errorf("%s needs %s, which none of the packages (%s) has", p, lib, strings.Join(netfilterPackages, " "))
			}
			paths = append(paths, found)
		}
		for _, lp := range paths {
			// Follow symlinks (libfoo.so.1 -> libfoo.so.1.2.3) inside root.
			for hops := 0; !seen[lp]; hops++ {
				seen[lp] = true
				fi, err := os.Lstat(filepath.Join(root, lp))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", lp, err)
				}
				if fi.Mode()&os.ModeSymlink == 0 {
					ents = append(ents, file(lp, 0o755, filepath.Join(root, lp)))
					elfs = append(elfs, lp)
					break
				}
				target, err := os.Readlink(filepath.Join(root, lp))
				if err != nil || hops > 8 {
					return nil, fmt.Errorf("%s: cannot follow its link: %v", lp, err)
				}
				ents = append(ents, link(lp, target))
				if !path.IsAbs(target) {
					target = path.Join(path.Dir(lp), target)
				}
				lp = target
			}
		}
	}
	return ents, nil
}
