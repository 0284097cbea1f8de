// Command podnet is the lab's pod network agent (docs/e2e.md, "The pod
// network"). Calico cannot be built from the module proxy, so the lab runs
// the CNI project's own bridge and host-local plugins with each Node's
// spec.podCIDR (kubeadm's controller manager allocates them from the pod
// subnet), and this agent, one per node (a hostNetwork DaemonSet with
// NET_ADMIN), which:
//
//   - writes the node's CNI configuration (bridge + host-local on its
//     podCIDR, then portmap) once the node has a podCIDR, atomically and so
//     that containerd's watcher of the directory reloads it (see
//     writeConf); the bridge plugin's forceAddress moves the bridge to a new
//     podCIDR's gateway when the node comes back with another one;
//   - keeps one route per other node: its podCIDR via its InternalIP. All
//     lab nodes share one layer-2 bridge, so no encapsulation is needed.
//     Routes it owns carry the routing protocol number 201; those of nodes
//     that are gone or changed are removed.
//
// It watches the Nodes (a client-go informer with its ServiceAccount) and
// acts on every change of a podCIDR or an InternalIP, a node added or
// deleted, at once; every RESYNC (default 30s) it checks the configuration
// and the routes again, so one changed by hand is put back. Environment:
// NODE_NAME (required, from the downward API), CNI_CONF_DIR (default
// /host/etc/cni/net.d), MTU (optional), RESYNC (optional),
// KUBERNETES_SERVICE_HOST/PORT.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

const (
	routeProto  = netlink.RouteProtocol(201)
	confName    = "10-hybridctl-lab.conflist"
	networkName = "hybridctl-lab"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx)
	stop()
	if err != nil {
		log.Print("podnet: ", err)
		os.Exit(1)
	}
}

type config struct {
	node    string
	confDir string
	mtu     int
	resync  time.Duration
}

// agent is one node's podnet: its routing table (a netlink handle on the
// node's network namespace) and what it last wrote, so that it writes the
// configuration once after it starts and then only when it changes.
type agent struct {
	config
	nl      *netlink.Handle
	written []byte
}

func configFromEnv() (config, error) {
	c := config{node: os.Getenv("NODE_NAME"), confDir: os.Getenv("CNI_CONF_DIR"), resync: 30 * time.Second}
	if c.node == "" {
		return c, errors.New("NODE_NAME is not set")
	}
	if c.confDir == "" {
		c.confDir = "/host/etc/cni/net.d"
	}
	if v := os.Getenv("MTU"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 576 || m > 65535 {
			return c, fmt.Errorf("MTU %q: want 576-65535", v)
		}
		c.mtu = m
	}
	if v := os.Getenv("RESYNC"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("RESYNC %q: want a duration of at least 1s", v)
		}
		c.resync = d
	}
	return c, nil
}

func run(ctx context.Context) error {
	c, err := configFromEnv()
	if err != nil {
		return err
	}
	// The in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT, the
	// ServiceAccount's CA, and its token, read again as the kubelet
	// rotates it.
	rc, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("the API server's address and credentials: %w", err)
	}
	rc.UserAgent = "hybridctl-lab-podnet/" + c.node
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	return watch(ctx, cs, &agent{config: c, nl: h})
}

// watch runs the agent on the Nodes cs serves until ctx is done.
func watch(ctx context.Context, cs kubernetes.Interface, a *agent) error {
	factory := informers.NewSharedInformerFactory(cs, 0)
	nodes := factory.Core().V1().Nodes()
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default: // a sync is due already
		}
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() },
		UpdateFunc: func(old, cur any) {
			if changed(old, cur) {
				poke()
			}
		},
		DeleteFunc: func(any) { poke() },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return ctx.Err()
	}
	return a.loop(ctx, nodes.Lister(), kick)
}

// loop syncs at once, on every kick, and every resync interval, until ctx
// is done.
func (a *agent) loop(ctx context.Context, lister listersv1.NodeLister, kick <-chan struct{}) error {
	t := time.NewTicker(a.resync)
	defer t.Stop()
	for {
		ns, err := lister.List(labels.Everything())
		if err == nil {
			err = a.sync(ctx, ns)
		}
		if err != nil {
			log.Print("podnet: ", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-t.C:
		}
	}
}

// changed says whether an update matters to the pod network: a podCIDR or
// an InternalIP (not the status heartbeats every node sends).
func changed(old, cur any) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return o.Spec.PodCIDR != n.Spec.PodCIDR || !slices.Equal(o.Spec.PodCIDRs, n.Spec.PodCIDRs) || !internalIP(o).Equal(internalIP(n))
}

func internalIP(n *corev1.Node) net.IP {
	for _, a := range n.Status.Addresses {
		if ip := net.ParseIP(a.Address).To4(); a.Type == corev1.NodeInternalIP && ip != nil {
			return ip
		}
	}
	return nil
}

// peer is another node's pod CIDR and the address that reaches it.
type peer struct {
	node string
	cidr *net.IPNet
	via  net.IP
}

// desired is the node's own podCIDR (nil: none yet) and the routes to every
// other node's.
func desired(self string, ns []*corev1.Node) (own *net.IPNet, peers []peer) {
	for _, n := range ns {
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		cidr := firstV4(cidrs)
		if cidr == nil {
			continue
		}
		if n.Name == self {
			own = cidr
			continue
		}
		if via := internalIP(n); via != nil {
			peers = append(peers, peer{node: n.Name, cidr: cidr, via: via})
		}
	}
	slices.SortFunc(peers, func(a, b peer) int { return bytes.Compare(a.cidr.IP.To4(), b.cidr.IP.To4()) })
	return own, peers
}

// sync makes the node's CNI configuration and routes what the Nodes say.
// The routes are kept whether or not the node has a podCIDR yet.
func (a *agent) sync(ctx context.Context, ns []*corev1.Node) error {
	own, peers := desired(a.node, ns)
	var errs []error
	if own == nil {
		errs = append(errs, fmt.Errorf("node %s has no IPv4 podCIDR yet (is the controller manager allocating node CIDRs?)", a.node))
	} else if err := a.writeConf(ctx, own); err != nil {
		errs = append(errs, err)
	}
	if err := syncRoutes(ctx, a.nl, peers); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func firstV4(cidrs []string) *net.IPNet {
	for _, s := range cidrs {
		if _, n, err := net.ParseCIDR(s); err == nil && n.IP.To4() != nil {
			return n
		}
	}
	return nil
}

// conflist is the node's CNI configuration for its pod CIDR. forceAddress
// lets the bridge plugin replace the bridge's address when the node comes
// back with another podCIDR (after a reset and a join): without it every
// pod sandbox there fails with `"cni0" already has an IP address different
// from ...`, the old gateway still on the bridge.
func conflist(podCIDR string, mtu int) ([]byte, error) {
	bridge := map[string]any{
		"type": "bridge", "bridge": "cni0", "isGateway": true, "forceAddress": true, "ipMasq": false, "hairpinMode": true,
		"ipam": map[string]any{
			"type":   "host-local",
			"ranges": [][]map[string]string{{{"subnet": podCIDR}}},
			"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
		},
	}
	if mtu > 0 {
		bridge["mtu"] = mtu
	}
	return json.MarshalIndent(map[string]any{
		"cniVersion": "1.0.0",
		"name":       networkName,
		"plugins": []any{
			bridge,
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}, "", "  ")
}

// writeConf writes the node's CNI configuration when it is not on disk as
// it should be, and once after the agent starts whatever is on disk.
//
// containerd reloads the directory's configuration on a write, rename or
// remove event of its watcher and ignores create events
// (internal/cri/server/cni_conf_syncer.go in containerd 2.2): a file put
// in place by a rename from another directory, or moved back by hand, is
// not seen. atomicfile writes it beside its place under a name the CNI
// loader skips (.NAME.tmp-*, no .conf/.conflist/.json suffix), syncs and
// renames it over its place: readers see the old or the new file, never
// half of one, and the rename away from the temporary name is the event
// containerd acts on. The write after a start covers a configuration that
// was put back while no agent ran (containerd would still be without a
// network).
func (a *agent) writeConf(ctx context.Context, own *net.IPNet) error {
	data, err := conflist(own.String(), a.mtu)
	if err != nil {
		return err
	}
	path := filepath.Join(a.confDir, confName)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) && bytes.Equal(a.written, data) {
		return nil
	}
	if err := os.MkdirAll(a.confDir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := atomicfile.Write(ctx, path, data, 0o644, atomicfile.Options{}); err != nil {
		return err
	}
	a.written = data
	log.Printf("podnet: wrote %s for %s", path, own)
	return nil
}

// syncRoutes makes the routes podnet owns (protocol 201) in h's network
// namespace exactly one per peer: added, replaced when a peer's address
// changed, removed when their node is gone or has another podCIDR.
func syncRoutes(ctx context.Context, h *netlink.Handle, peers []peer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	have, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProto}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("list routes: %w", err)
	}
	var errs []error
	for _, p := range peers {
		r := &netlink.Route{Dst: p.cidr, Gw: p.via, Protocol: routeProto}
		i := slices.IndexFunc(have, func(r netlink.Route) bool {
			return r.Dst != nil && r.Dst.String() == p.cidr.String() && r.Gw.Equal(p.via)
		})
		if i >= 0 {
			have = slices.Delete(have, i, i+1)
			continue
		}
		// RouteReplace replaces any route to the same destination: it is
		// no longer stale (deleting it after would remove the new one).
		have = slices.DeleteFunc(have, func(r netlink.Route) bool { return r.Dst != nil && r.Dst.String() == p.cidr.String() })
		if err := h.RouteReplace(r); err != nil {
			errs = append(errs, fmt.Errorf("route %s via %s (node %s): %w", p.cidr, p.via, p.node, err))
			continue
		}
		log.Printf("podnet: route %s via %s (node %s)", p.cidr, p.via, p.node)
	}
	for _, r := range have {
		if err := h.RouteDel(&r); err != nil {
			errs = append(errs, fmt.Errorf("remove stale route %s: %w", r.Dst, err))
			continue
		}
		log.Printf("podnet: removed stale route %s via %s", r.Dst, r.Gw)
	}
	return errors.Join(errs...)
}
