// Command podnet is the lab's pod network agent (docs/e2e.md, "The pod
// network"). Calico cannot be built from the module proxy, so the lab runs
// the CNI project's own bridge and host-local plugins with each Node's
// spec.podCIDR (kubeadm's controller manager allocates them from the pod
// subnet), and this agent, one per node (a hostNetwork DaemonSet with
// NET_ADMIN), which:
//
//   - writes the node's CNI configuration (bridge + host-local on its
//     podCIDR, then portmap) once the node has a podCIDR;
//   - keeps one route per other node: its podCIDR via its InternalIP. All
//     lab nodes share one layer-2 bridge, so no encapsulation is needed.
//     Routes it owns carry the routing protocol number 201 and are removed
//     when their node goes away.
//
// It polls the API (GET /api/v1/nodes, 10 s deadline) every INTERVAL
// (default 10s) with its ServiceAccount token. Environment: NODE_NAME
// (required, from the downward API), CNI_CONF_DIR (default
// /host/etc/cni/net.d), MTU (optional), KUBERNETES_SERVICE_HOST/PORT.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
)

const (
	saDir       = "/var/run/secrets/kubernetes.io/serviceaccount"
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
	node     string
	confDir  string
	mtu      int
	interval time.Duration
	apiURL   string
	client   *http.Client
}

func run(ctx context.Context) error {
	c := config{node: os.Getenv("NODE_NAME"), confDir: os.Getenv("CNI_CONF_DIR"), interval: 10 * time.Second}
	if c.node == "" {
		return errors.New("NODE_NAME is not set")
	}
	if c.confDir == "" {
		c.confDir = "/host/etc/cni/net.d"
	}
	if v := os.Getenv("MTU"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 576 || m > 65535 {
			return fmt.Errorf("MTU %q: want 576-65535", v)
		}
		c.mtu = m
	}
	if v := os.Getenv("INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return fmt.Errorf("INTERVAL %q: want a duration of at least 1s", v)
		}
		c.interval = d
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return errors.New("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not in a pod?)")
	}
	c.apiURL = "https://" + net.JoinHostPort(host, port)
	caPEM, err := os.ReadFile(filepath.Join(saDir, "ca.crt"))
	if err != nil {
		return fmt.Errorf("read the cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s/ca.crt holds no certificate", saDir)
	}
	c.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	for {
		if err := c.sync(ctx); err != nil {
			log.Print("podnet: ", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.interval):
		}
	}
}

type nodeList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			PodCIDRs []string `json:"podCIDRs"`
		} `json:"spec"`
		Status struct {
			Addresses []struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"addresses"`
		} `json:"status"`
	} `json:"items"`
}

// peer is another node's pod CIDR and the address that reaches it.
type peer struct {
	node string
	cidr *net.IPNet
	via  net.IP
}

func (c *config) sync(ctx context.Context) error {
	// The token is read every time: the kubelet rotates it.
	tok, err := os.ReadFile(filepath.Join(saDir, "token"))
	if err != nil {
		return fmt.Errorf("read the ServiceAccount token: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.apiURL+"/api/v1/nodes", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(tok)))
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list nodes: %s: %.200s", resp.Status, body)
	}
	var nl nodeList
	if err := json.Unmarshal(body, &nl); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var own *net.IPNet
	var peers []peer
	for _, n := range nl.Items {
		cidr := firstV4(n.Spec.PodCIDRs)
		if cidr == nil {
			continue
		}
		if n.Metadata.Name == c.node {
			own = cidr
			continue
		}
		var via net.IP
		for _, a := range n.Status.Addresses {
			if ip := net.ParseIP(a.Address).To4(); a.Type == "InternalIP" && ip != nil {
				via = ip
				break
			}
		}
		if via != nil {
			peers = append(peers, peer{node: n.Metadata.Name, cidr: cidr, via: via})
		}
	}
	if own == nil {
		return fmt.Errorf("node %s has no IPv4 podCIDR yet (is the controller manager allocating node CIDRs?)", c.node)
	}
	if err := c.writeConf(own); err != nil {
		return err
	}
	return syncRoutes(peers)
}

func firstV4(cidrs []string) *net.IPNet {
	for _, s := range cidrs {
		if _, n, err := net.ParseCIDR(s); err == nil && n.IP.To4() != nil {
			return n
		}
	}
	return nil
}

// conflist is the node's CNI configuration for its pod CIDR.
func conflist(podCIDR string, mtu int) ([]byte, error) {
	bridge := map[string]any{
		"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
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

func (c *config) writeConf(own *net.IPNet) error {
	data, err := conflist(own.String(), c.mtu)
	if err != nil {
		return err
	}
	path := filepath.Join(c.confDir, confName)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(c.confDir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(c.confDir, ".podnet-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	log.Printf("podnet: wrote %s for %s", path, own)
	return nil
}

func syncRoutes(peers []peer) error {
	have, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProto}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("list routes: %w", err)
	}
	var errs []error
	for _, p := range peers {
		r := &netlink.Route{Dst: p.cidr, Gw: p.via, Protocol: routeProto}
		i := slices.IndexFunc(have, func(h netlink.Route) bool {
			return h.Dst != nil && h.Dst.String() == p.cidr.String() && h.Gw.Equal(p.via)
		})
		if i >= 0 {
			have = slices.Delete(have, i, i+1)
			continue
		}
		// RouteReplace replaces any route to the same destination: it is
		// no longer stale (deleting it after would remove the new one).
		have = slices.DeleteFunc(have, func(h netlink.Route) bool { return h.Dst != nil && h.Dst.String() == p.cidr.String() })
		if err := netlink.RouteReplace(r); err != nil {
			errs = append(errs, fmt.Errorf("route %s via %s (node %s): %w", p.cidr, p.via, p.node, err))
			continue
		}
		log.Printf("podnet: route %s via %s (node %s)", p.cidr, p.via, p.node)
	}
	for _, h := range have {
		if err := netlink.RouteDel(&h); err != nil {
			errs = append(errs, fmt.Errorf("remove stale route %s: %w", h.Dst, err))
			continue
		}
		log.Printf("podnet: removed stale route %s via %s", h.Dst, h.Gw)
	}
	return errors.Join(errs...)
}
