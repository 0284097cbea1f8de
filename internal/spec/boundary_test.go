package spec

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/finding"

	"gopkg.in/yaml.v3"
)

// variant returns testdata/base.yaml (the guide's lab) with edits applied:
// each key is a dotted path ("spec.network.blockSize", "spec.nodes[3].name",
// "spec.nodes[+]" appends), each value the new value (nil deletes).
func variant(t *testing.T, edits map[string]any) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// Apply appends last, so "spec.nodes[4].x" can refer to an appended node.
	var keys []string
	for k := range edits {
		keys = append(keys, k)
	}
	for pass := 0; pass < 2; pass++ {
		for _, k := range keys {
			if strings.HasSuffix(k, "[+]") == (pass == 0) {
				setPath(t, doc, k, edits[k])
			}
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func setPath(t *testing.T, doc map[string]any, path string, val any) {
	t.Helper()
	parts := strings.Split(path, ".")
	var cur any = doc
	for i, p := range parts {
		name, idx, hasIdx := strings.Cut(p, "[")
		last := i == len(parts)-1
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: %s is not a map", path, name)
		}
		if !hasIdx {
			if last {
				if val == nil {
					delete(m, name)
				} else {
					m[name] = val
				}
				return
			}
			if m[name] == nil {
				m[name] = map[string]any{}
			}
			cur = m[name]
			continue
		}
		idx = strings.TrimSuffix(idx, "]")
		list, _ := m[name].([]any)
		if idx == "+" {
			m[name] = append(list, val)
			return
		}
		n, err := strconv.Atoi(idx)
		if err != nil || n >= len(list) {
			t.Fatalf("%s: index %s out of range", path, idx)
		}
		if last {
			list[n] = val
			return
		}
		cur = list[n]
	}
}

func node(name, role, os, addr string) map[string]any {
	n := map[string]any{"name": name, "role": role, "os": os, "address": addr}
	if os == "windows" {
		n["windows"] = map[string]any{"build": "10.0.26100"}
	}
	return n
}

// boundary is one side of a limit: the edits, the rule it concerns, and
// what that rule must say: nothing (sev ""), or a diagnostic of that
// severity at path whose message holds every string in msg.
type boundary struct {
	name  string
	edits map[string]any
	rule  string
	sev   finding.Severity
	path  string
	msg   []string
}

func (c boundary) run(t *testing.T) {
	t.Helper()
	r := Parse("cluster.yaml", variant(t, c.edits))
	var mine Diagnostics
	for _, d := range r.Diagnostics {
		if d.Rule == c.rule {
			mine = append(mine, d)
		}
	}
	if c.sev == "" {
		if len(mine) > 0 {
			t.Errorf("%s: want no %s diagnostic, got:\n%s", c.name, c.rule, diagText(mine))
		}
		return
	}
	for _, d := range mine {
		if d.Severity != c.sev || d.Path != c.path {
			continue
		}
		for _, s := range c.msg {
			if !strings.Contains(d.Message, s) {
				t.Errorf("%s: %s message %q lacks %q", c.name, c.rule, d.Message, s)
			}
		}
		return
	}
	t.Errorf("%s: want %s %s at %s, got:\n%s", c.name, c.sev, c.rule, c.path, diagText(r.Diagnostics))
}

// winFirst is the lab's nodes with the Windows node first.
func winFirst() []any {
	return []any{
		node("k8s-lab-win-1", "worker", "windows", "192.168.10.25"),
		node("k8s-lab-master-1", "control-plane", "linux", "192.168.10.23"),
		node("k8s-lab-node-1", "worker", "linux", "192.168.10.24"),
		node("k8s-lab-node-2", "worker", "linux", "192.168.10.26"),
	}
}

// boundaryCases are both sides of every numeric and length limit of
// Rules(). TestSchemaAgreesWithRules runs them through the JSON Schema too.
func boundaryCases() []boundary {
	E, W := finding.Error, finding.Warning
	winName := "spec.nodes[3].name"
	single := []any{node("k8s-lab-master-1", "control-plane", "linux", "192.168.10.23")}
	return []boundary{
		// S301: a Windows computer name is at most 15 characters.
		{"windows name 15", map[string]any{winName: "k8s-lab-win-123"}, "S301", "", "", nil},
		{"windows name 16", map[string]any{winName: "k8s-lab-win-1234"}, "S301", E, winName, []string{`"k8s-lab-win-1234" is 16 characters`, "at most 15"}},
		{"linux name 16", map[string]any{"spec.nodes[2].name": "k8s-lab-node-123"}, "S301", "", "", nil},
		// S105: node names are DNS labels (63 characters).
		{"node name 63", map[string]any{"spec.nodes[1].name": strings.Repeat("a", 63)}, "S105", "", "", nil},
		{"node name 64", map[string]any{"spec.nodes[1].name": strings.Repeat("a", 64)}, "S105", E, "spec.nodes[1].name", []string{"not a valid node name"}},
		{"node name upper", map[string]any{"spec.nodes[1].name": "Node-1"}, "S105", E, "spec.nodes[1].name", nil},
		// S203: the service CIDR is /12 to /28.
		{"service /12", map[string]any{"spec.network.serviceCIDR": "10.96.0.0/12"}, "S203", "", "", nil},
		{"service /11", map[string]any{"spec.network.serviceCIDR": "10.96.0.0/11"}, "S203", E, "spec.network.serviceCIDR", []string{"10.96.0.0/11 is larger than /12"}},
		{"service /28", map[string]any{"spec.network.serviceCIDR": "10.96.0.0/28"}, "S203", "", "", nil},
		{"service /29", map[string]any{"spec.network.serviceCIDR": "10.96.0.0/29"}, "S203", E, "spec.network.serviceCIDR", []string{"too small"}},
		// S201: block size 20-32 and inside the pod CIDR.
		{"block 19", map[string]any{"spec.network.blockSize": 19}, "S201", E, "spec.network.blockSize", []string{"19 is outside", "20-32"}},
		{"block 20", map[string]any{"spec.network.blockSize": 20}, "S201", "", "", nil},
		{"block 32 linux", map[string]any{"spec.network.blockSize": 32, "spec.nodes[3]": node("k8s-lab-node-3", "worker", "linux", "192.168.10.25")}, "S201", "", "", nil},
		{"block 33", map[string]any{"spec.network.blockSize": 33}, "S201", E, "spec.network.blockSize", []string{"33 is outside"}},
		{"block 23 in /24", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 23}, "S201", E, "spec.network.blockSize", []string{"/23 blocks do not fit in podCIDR 172.21.0.0/24"}},
		{"block 24 in /24", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 24}, "S201", "", "", nil},
		// S202: at least one block per node (error), two (warning).
		{"1 block for 4 nodes", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 24}, "S202", E, "spec.network.podCIDR", []string{"holds 1 /24 block for 4 nodes"}},
		{"2 blocks for 4 nodes", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 25}, "S202", E, "spec.network.podCIDR", []string{"holds 2 /25 blocks for 4 nodes"}},
		{"4 blocks for 4 nodes", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 26}, "S202", W, "spec.network.podCIDR", []string{"holds 4 /26 blocks for 4 nodes"}},
		{"4 blocks for 5 nodes", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 26, "spec.nodes[+]": node("k8s-lab-node-3", "worker", "linux", "192.168.10.27")}, "S202", E, "spec.network.podCIDR", []string{"holds 4 /26 blocks for 5 nodes"}},
		{"8 blocks for 4 nodes", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 27}, "S202", "", "", nil},
		{"8 blocks for 5 nodes", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 27, "spec.nodes[+]": node("k8s-lab-node-3", "worker", "linux", "192.168.10.27")}, "S202", W, "spec.network.podCIDR", []string{"holds 8 /27 blocks for 5 nodes"}},
		{"1 block for 1 node", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 24, "spec.nodes": single}, "S202", W, "spec.network.podCIDR", []string{"holds 1 /24 block for 1 node,"}},
		// ... at the ends of the block size range (20 and 32), where the rule is still checked.
		{"1 /20 block for 4 nodes", map[string]any{"spec.network.podCIDR": "172.16.0.0/20", "spec.network.blockSize": 20}, "S202", E, "spec.network.podCIDR", []string{"172.16.0.0/20 holds 1 /20 block for 4 nodes"}},
		{"2 /32 blocks for 4 nodes", map[string]any{"spec.network.podCIDR": "172.21.0.0/31", "spec.network.blockSize": 32}, "S202", E, "spec.network.podCIDR", []string{"172.21.0.0/31 holds 2 /32 blocks for 4 nodes"}},
		{"2 blocks for 1 node", map[string]any{"spec.network.podCIDR": "172.21.0.0/24", "spec.network.blockSize": 25, "spec.nodes": single}, "S202", "", "", nil},
		// S303: a Windows block keeps 4 addresses; at least one pod.
		{"windows /29", map[string]any{"spec.network.blockSize": 29}, "S303", "", "", nil},
		{"windows /30", map[string]any{"spec.network.blockSize": 30}, "S303", E, "spec.network.blockSize", []string{"/30 blocks leave 0 addresses"}},
		{"linux-only /30", map[string]any{"spec.network.blockSize": 30, "spec.nodes[3]": node("k8s-lab-node-3", "worker", "linux", "192.168.10.25")}, "S303", "", "", nil},
		// ... and at the top of the block size range, where the rule is still checked.
		{"windows /32", map[string]any{"spec.network.blockSize": 32}, "S303", E, "spec.network.blockSize", []string{"/32 blocks leave 0 addresses"}},
		// S108: MTU 1280-9000.
		{"mtu 1279", map[string]any{"spec.network.mtu": 1279}, "S108", E, "spec.network.mtu", []string{"1279 is outside 1280-9000"}},
		{"mtu 1280", map[string]any{"spec.network.mtu": 1280}, "S108", "", "", nil},
		{"mtu 9000", map[string]any{"spec.network.mtu": 9000}, "S108", "", "", nil},
		{"mtu 9001", map[string]any{"spec.network.mtu": 9001}, "S108", E, "spec.network.mtu", []string{"9001 is outside"}},
		// S102: every pair of networks, and the neighbour just outside.
		{"node overlaps pod", map[string]any{"spec.network.podCIDR": "192.168.0.0/16"}, "S102", E, "spec.network.podCIDR", []string{"overlaps nodeCIDR 192.168.10.0/24"}},
		{"node overlaps service", map[string]any{"spec.network.serviceCIDR": "192.168.0.0/16"}, "S102", E, "spec.network.serviceCIDR", []string{"overlaps nodeCIDR 192.168.10.0/24"}},
		{"pod overlaps service", map[string]any{"spec.network.podCIDR": "10.100.0.0/16"}, "S102", E, "spec.network.serviceCIDR", []string{"overlaps podCIDR 10.100.0.0/16"}},
		{"pod just before service", map[string]any{"spec.network.podCIDR": "10.80.0.0/12"}, "S102", "", "", nil},
		{"pod just after service", map[string]any{"spec.network.podCIDR": "10.112.0.0/16"}, "S102", "", "", nil},
		{"pod last address of service", map[string]any{"spec.network.podCIDR": "10.111.255.0/24"}, "S102", E, "spec.network.serviceCIDR", nil},
		// S103: host addresses inside the node network.
		{"address .0", map[string]any{"spec.nodes[1].address": "192.168.10.0"}, "S103", E, "spec.nodes[1].address", []string{"192.168.10.0 is not a host address in nodeCIDR 192.168.10.0/24"}},
		{"address .254", map[string]any{"spec.nodes[1].address": "192.168.10.254"}, "S103", "", "", nil},
		{"address .255", map[string]any{"spec.nodes[1].address": "192.168.10.255"}, "S103", E, "spec.nodes[1].address", []string{"192.168.10.255 is not a host address"}},
		{"address outside", map[string]any{"spec.nodes[1].address": "192.168.11.24"}, "S103", E, "spec.nodes[1].address", nil},
		{"address is gateway", map[string]any{"spec.nodes[1].address": "192.168.10.1"}, "S103", E, "spec.nodes[1].address", []string{"is the gateway's address"}},
		{"address next to gateway", map[string]any{"spec.nodes[1].address": "192.168.10.2"}, "S103", "", "", nil},
		{"/30 network, address .2", map[string]any{"spec.network.nodeCIDR": "192.168.10.0/30", "spec.nodes": []any{node("k8s-lab-master-1", "control-plane", "linux", "192.168.10.2")}}, "S103", "", "", nil},
		{"/30 network, address .3", map[string]any{"spec.network.nodeCIDR": "192.168.10.0/30", "spec.nodes": []any{node("k8s-lab-master-1", "control-plane", "linux", "192.168.10.3")}}, "S103", E, "spec.nodes[0].address", []string{"192.168.10.3 is not a host address in nodeCIDR 192.168.10.0/30"}},
		{"/31 network, address .1", map[string]any{"spec.network.nodeCIDR": "192.168.10.0/31", "spec.network.gateway": "192.168.10.0", "spec.nodes": []any{node("k8s-lab-master-1", "control-plane", "linux", "192.168.10.1")}}, "S103", "", "", nil},
		{"gateway .255", map[string]any{"spec.network.gateway": "192.168.10.255"}, "S103", E, "spec.network.gateway", nil},
		// S403: Linux workers beside a Windows node: 0 error, 1 warning, 2 fine.
		{"0 linux workers", map[string]any{"spec.nodes[1].role": "control-plane", "spec.nodes[2].role": "control-plane"}, "S403", E, "spec.nodes", []string{"no Linux worker"}},
		{"1 linux worker", map[string]any{"spec.nodes[2].os": "windows", "spec.nodes[2].name": "k8s-lab-win-2", "spec.nodes[2].windows": map[string]any{"build": "10.0.26100"}}, "S403", W, "spec.nodes", []string{"one Linux worker"}},
		{"2 linux workers", map[string]any{}, "S403", "", "", nil},
		// S603: encapsulation None needs BGP (Linux-only clusters, so that S401/S402 stay out of it).
		{"None with BGP", map[string]any{"spec.calico.encapsulation": "None", "spec.calico.bgp": "Enabled", "spec.nodes[3]": node("k8s-lab-node-3", "worker", "linux", "192.168.10.25")}, "S603", "", "", nil},
		{"None without BGP", map[string]any{"spec.calico.encapsulation": "None", "spec.calico.bgp": "Disabled", "spec.nodes[3]": node("k8s-lab-node-3", "worker", "linux", "192.168.10.25")}, "S603", E, "spec.calico.encapsulation", []string{"None needs BGP"}},
		// S401, S402, S403 with the Windows node first in the list (spec.nodes[0]).
		{"windows first, VXLANCrossSubnet", map[string]any{"spec.nodes": winFirst(), "spec.calico.encapsulation": "VXLANCrossSubnet"}, "S401", E, "spec.calico.encapsulation", []string{`"VXLANCrossSubnet", but spec.nodes[0] (k8s-lab-win-1) runs Windows`}},
		{"windows first, BGP", map[string]any{"spec.nodes": winFirst(), "spec.calico.bgp": "Enabled"}, "S402", E, "spec.calico.bgp", []string{`"Enabled", but spec.nodes[0] (k8s-lab-win-1) runs Windows`}},
		{"windows first, no linux worker", map[string]any{"spec.nodes": winFirst()[:2]}, "S403", E, "spec.nodes", []string{"a Windows node (k8s-lab-win-1) but no Linux worker"}},
		{"windows first, one linux worker", map[string]any{"spec.nodes": winFirst()[:3]}, "S403", W, "spec.nodes", []string{"one Linux worker"}},
		// S404: an even number of control planes is a warning.
		{"2 control planes", map[string]any{"spec.nodes[+]": node("k8s-lab-master-2", "control-plane", "linux", "192.168.10.22")}, "S404", W, "spec.nodes", []string{"has 2 control-plane nodes"}},
		{"3 control planes", map[string]any{"spec.nodes[+]": node("k8s-lab-master-2", "control-plane", "linux", "192.168.10.22"), "spec.nodes[1].role": "control-plane"}, "S404", "", "", nil},
		{"no control plane", map[string]any{"spec.nodes[0].role": "worker"}, "S404", E, "spec.nodes", []string{"no control-plane node"}},
		// S602: Kubernetes 1.34-1.37 (crictl follows the minor, so that
		// only the version warning can appear).
		{"kubernetes v1.33.9", map[string]any{"spec.kubernetesVersion": "v1.33.9", "spec.crictl.version": "1.33.0"}, "S602", W, "spec.kubernetesVersion", []string{"older than any version", "1.34 to 1.37"}},
		{"kubernetes v1.34.0", map[string]any{"spec.kubernetesVersion": "v1.34.0", "spec.crictl.version": "1.34.0"}, "S602", "", "", nil},
		{"kubernetes v1.37.9", map[string]any{"spec.kubernetesVersion": "v1.37.9"}, "S602", "", "", nil},
		{"kubernetes v1.38.0", map[string]any{"spec.kubernetesVersion": "v1.38.0", "spec.crictl.version": "1.38.0"}, "S602", W, "spec.kubernetesVersion", []string{"newer than any version", "1.34 to 1.37"}},
		{"kubernetes v9.99.0", map[string]any{"spec.kubernetesVersion": "v9.99.0", "spec.crictl.version": "9.99.0"}, "S602", W, "spec.kubernetesVersion", []string{"v9.99.0 is newer than any version"}},
		// S001: an integer field holds a 32-bit number; past it, the range is said.
		{"mtu 2147483647", map[string]any{"spec.network.mtu": 2147483647}, "S001", "", "", nil},
		{"mtu 2147483648", map[string]any{"spec.network.mtu": 2147483648}, "S001", E, "spec.network.mtu", []string{"2147483648 is out of range", "at most 2147483647"}},
		{"mtu -2147483649", map[string]any{"spec.network.mtu": -2147483649}, "S001", E, "spec.network.mtu", []string{"out of range", "at least -2147483648"}},
		{"mtu 1.5", map[string]any{"spec.network.mtu": 1.5}, "S001", E, "spec.network.mtu", []string{"want a whole number"}},
		// S501: endpoint ports 1-65535.
		{"endpoint port 0", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:0"}, "S501", E, "spec.controlPlaneEndpoint", []string{"not a TCP port"}},
		{"endpoint port 1", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:1"}, "S501", "", "", nil},
		{"endpoint port 65535", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:65535"}, "S501", "", "", nil},
		{"endpoint port 65536", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:65536"}, "S501", E, "spec.controlPlaneEndpoint", []string{"not a TCP port"}},
		// S502: an IP endpoint outside the service (10.96.0.0/12) and pod (172.21.0.0/16) networks, IPv4.
		{"endpoint before service", map[string]any{"spec.controlPlaneEndpoint": "10.95.255.255:6443"}, "S502", "", "", nil},
		{"endpoint first service address", map[string]any{"spec.controlPlaneEndpoint": "10.96.0.0:6443"}, "S502", E, "spec.controlPlaneEndpoint", []string{"10.96.0.0 is inside the service network 10.96.0.0/12", "use the control-plane node's address (192.168.10.23:6443)"}},
		{"endpoint API service IP", map[string]any{"spec.controlPlaneEndpoint": "10.96.0.1:6443"}, "S502", E, "spec.controlPlaneEndpoint", []string{"HC305"}},
		{"endpoint last service address", map[string]any{"spec.controlPlaneEndpoint": "10.111.255.255:6443"}, "S502", E, "spec.controlPlaneEndpoint", []string{"inside the service network"}},
		{"endpoint after service", map[string]any{"spec.controlPlaneEndpoint": "10.112.0.0:6443"}, "S502", "", "", nil},
		{"endpoint before pods", map[string]any{"spec.controlPlaneEndpoint": "172.20.255.255:6443"}, "S502", "", "", nil},
		{"endpoint first pod address", map[string]any{"spec.controlPlaneEndpoint": "172.21.0.0:6443"}, "S502", E, "spec.controlPlaneEndpoint", []string{"inside the pod network 172.21.0.0/16"}},
		{"endpoint last pod address", map[string]any{"spec.controlPlaneEndpoint": "172.21.255.255:6443"}, "S502", E, "spec.controlPlaneEndpoint", []string{"inside the pod network"}},
		{"endpoint IPv6", map[string]any{"spec.controlPlaneEndpoint": "[fd00::23]:6443"}, "S502", E, "spec.controlPlaneEndpoint", []string{"IPv6", "IPv4 only", "192.168.10.23:6443"}},
		{"endpoint IPv4-mapped IPv6", map[string]any{"spec.controlPlaneEndpoint": "[::ffff:192.168.10.23]:6443"}, "S502", E, "spec.controlPlaneEndpoint", []string{"IPv6"}},
		{"endpoint after pods", map[string]any{"spec.controlPlaneEndpoint": "172.22.0.0:6443"}, "S502", "", "", nil},
		{"endpoint node address", map[string]any{"spec.controlPlaneEndpoint": "192.168.10.23:6443"}, "S502", "", "", nil},
		{"endpoint name", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:6443"}, "S502", "", "", nil},
		// S503: the API port is none the control-plane node already uses, and no NodePort.
		{"api port 2378", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:2378"}, "S503", "", "", nil},
		{"api port 2379", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:2379"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 2379 is taken on the control-plane node by etcd (client, peer and metrics)", "use 6443"}},
		{"api port 2381", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:2381"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 2381 is taken on the control-plane node by etcd", "use 6443"}},
		{"api port 2382", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:2382"}, "S503", "", "", nil},
		{"api port 5472", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:5472"}, "S503", "", "", nil},
		{"api port 5473", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:5473"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 5473 is taken on the control-plane node by Calico Typha", "use 6443"}},
		{"api port 5474", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:5474"}, "S503", "", "", nil},
		{"api port 10247", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10247"}, "S503", "", "", nil},
		{"api port 10248", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10248"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 10248 is taken on the control-plane node by the kubelet's health check", "use 6443"}},
		{"api port 10249", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10249"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 10249 is taken on the control-plane node by kube-proxy's metrics", "use 6443"}},
		{"api port 10250", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10250"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 10250 is taken on the control-plane node by the kubelet API", "use 6443"}},
		{"api port 10251", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10251"}, "S503", "", "", nil},
		{"api port 10255", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10255"}, "S503", "", "", nil},
		{"api port 10256", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10256"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 10256 is taken on the control-plane node by kube-proxy's health check", "use 6443"}},
		{"api port 10257", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10257"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 10257 is taken on the control-plane node by kube-controller-manager", "use 6443"}},
		{"api port 10258", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10258"}, "S503", "", "", nil},
		{"api port 10259", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10259"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 10259 is taken on the control-plane node by kube-scheduler", "use 6443"}},
		{"api port 10260", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:10260"}, "S503", "", "", nil},
		{"api port 29999", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:29999"}, "S503", "", "", nil},
		{"api port 30000", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:30000"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 30000 is in the NodePort range (30000-32767)", "use 6443"}},
		{"api port 32767", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:32767"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 32767 is in the NodePort range (30000-32767)", "use 6443"}},
		{"api port 32768", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:32768"}, "S503", "", "", nil},
		{"api port 179 without BGP", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:179"}, "S503", "", "", nil},
		{"api port 178 with BGP", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:178", "spec.calico.bgp": "Enabled"}, "S503", "", "", nil},
		{"api port 179 with BGP", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:179", "spec.calico.bgp": "Enabled"}, "S503", E, "spec.controlPlaneEndpoint", []string{"port 179 is taken on the control-plane node by Calico BGP"}},
		{"api port 180 with BGP", map[string]any{"spec.controlPlaneEndpoint": "k8s-lab-api.example.com:180", "spec.calico.bgp": "Enabled"}, "S503", "", "", nil},
		// S109: the nodes' DNS servers outside the cluster's own networks; 10.96.0.10 is the DNS Service IP.
		{"dns before service", map[string]any{"spec.network.dnsServers": []any{"10.95.255.255"}}, "S109", "", "", nil},
		{"dns first service address", map[string]any{"spec.network.dnsServers": []any{"10.96.0.0"}}, "S109", W, "spec.network.dnsServers[0]", []string{"inside the service network 10.96.0.0/12", "the gateway 192.168.10.1"}},
		{"dns next to the DNS service IP", map[string]any{"spec.network.dnsServers": []any{"10.96.0.9"}}, "S109", W, "spec.network.dnsServers[0]", []string{"inside the service network"}},
		{"dns is the DNS service IP", map[string]any{"spec.network.dnsServers": []any{"10.96.0.10"}}, "S109", W, "spec.network.dnsServers[0]", []string{"the cluster's DNS Service IP", "ask itself"}},
		{"dns last service address", map[string]any{"spec.network.dnsServers": []any{"10.111.255.255"}}, "S109", W, "spec.network.dnsServers[0]", []string{"inside the service network"}},
		{"dns after service", map[string]any{"spec.network.dnsServers": []any{"10.112.0.0"}}, "S109", "", "", nil},
		{"dns before pods", map[string]any{"spec.network.dnsServers": []any{"172.20.255.255"}}, "S109", "", "", nil},
		{"dns first pod address", map[string]any{"spec.network.dnsServers": []any{"172.21.0.0"}}, "S109", W, "spec.network.dnsServers[0]", []string{"inside the pod network 172.21.0.0/16"}},
		{"dns last pod address", map[string]any{"spec.network.dnsServers": []any{"172.21.255.255"}}, "S109", W, "spec.network.dnsServers[0]", []string{"inside the pod network"}},
		{"dns after pods", map[string]any{"spec.network.dnsServers": []any{"172.22.0.0"}}, "S109", "", "", nil},
		{"dns gateway", map[string]any{"spec.network.dnsServers": []any{"192.168.10.1"}}, "S109", "", "", nil},
		// S106: SSH ports 1-65535.
		{"ssh port -1", map[string]any{"spec.nodes[1].ssh": map[string]any{"port": -1}}, "S106", E, "spec.nodes[1].ssh.port", []string{"-1 is not a TCP port"}},
		{"ssh port 0 is the default 22", map[string]any{"spec.nodes[1].ssh": map[string]any{"port": 0}}, "S106", "", "", nil},
		{"ssh port 1", map[string]any{"spec.nodes[1].ssh": map[string]any{"port": 1}}, "S106", "", "", nil},
		{"ssh port 65535", map[string]any{"spec.nodes[1].ssh": map[string]any{"port": 65535}}, "S106", "", "", nil},
		{"ssh port 65536", map[string]any{"spec.nodes[1].ssh": map[string]any{"port": 65536}}, "S106", E, "spec.nodes[1].ssh.port", []string{"65536 is not a TCP port"}},
		// S106: ssh.user, a POSIX user name on Linux (at most 32), a
		// Windows account name on Windows (user part at most 64); never
		// an option.
		{"ssh user with @", map[string]any{"spec.nodes[1].ssh": map[string]any{"user": "a@b"}}, "S106", E, "spec.nodes[1].ssh.user", []string{"not a POSIX user name", "only for a Windows node"}},
		{"ssh user 32", map[string]any{"spec.nodes[1].ssh": map[string]any{"user": strings.Repeat("u", 32)}}, "S106", "", "", nil},
		{"ssh user 33", map[string]any{"spec.nodes[1].ssh": map[string]any{"user": strings.Repeat("u", 33)}}, "S106", E, "spec.nodes[1].ssh.user", []string{"at most 32 characters"}},
		{"ssh user 31 and $", map[string]any{"spec.nodes[1].ssh": map[string]any{"user": strings.Repeat("u", 31) + "$"}}, "S106", "", "", nil},
		{"ssh user _x-1", map[string]any{"spec.nodes[1].ssh": map[string]any{"user": "_x-1"}}, "S106", "", "", nil},
		{"ssh user starting with a digit", map[string]any{"spec.nodes[1].ssh": map[string]any{"user": "1x"}}, "S106", E, "spec.nodes[1].ssh.user", nil},
		{"ssh user upper case on linux", map[string]any{"spec.nodes[1].ssh": map[string]any{"user": "Admin"}}, "S106", E, "spec.nodes[1].ssh.user", []string{"only for a Windows node"}},
		{"ssh user as an option", map[string]any{"spec.nodes[1].ssh": map[string]any{"user": "-oProxyCommand=touch /tmp/x"}}, "S106", E, "spec.nodes[1].ssh.user", []string{"starts with '-'", "read it as an option"}},
		{"ssh user with a newline", map[string]any{"spec.nodes[1].ssh": map[string]any{"user": "root\nx"}}, "S106", E, "spec.nodes[1].ssh.user", []string{`"root\nx"`}},
		{"windows user 64", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": strings.Repeat("W", 64)}}, "S106", "", "", nil},
		{"windows user 65", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": strings.Repeat("W", 65)}}, "S106", E, "spec.nodes[3].ssh.user", []string{"not a Windows account name", "at most 64"}},
		{"windows domain user", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": `LAB\Jane Doe`}}, "S106", "", "", nil},
		{"windows upn", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": "jane@lab.example.com"}}, "S106", "", "", nil},
		{"windows user as an option", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": "-oProxyCommand"}}, "S106", E, "spec.nodes[3].ssh.user", []string{"starts with '-'"}},
		{"windows user part as an option", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": `LAB\-x`}}, "S106", E, "spec.nodes[3].ssh.user", nil},
		{"windows user with =", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": "a=b"}}, "S106", E, "spec.nodes[3].ssh.user", nil},
		{"windows user with ESC", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": "a\x1b[2Jb"}}, "S106", E, "spec.nodes[3].ssh.user", []string{`"a\x1b[2Jb"`}},
		{"windows user with a line separator", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": "a\u2028b"}}, "S106", E, "spec.nodes[3].ssh.user", nil},
		{"windows upn with a bad domain", map[string]any{"spec.nodes[3].ssh": map[string]any{"user": "a@-b"}}, "S106", E, "spec.nodes[3].ssh.user", nil},
		// S106: ssh.host is an IP address or a DNS name.
		{"ssh host name", map[string]any{"spec.nodes[1].ssh": map[string]any{"host": "bastion.example.com"}}, "S106", "", "", nil},
		{"ssh host ipv6", map[string]any{"spec.nodes[1].ssh": map[string]any{"host": "fd00::1"}}, "S106", "", "", nil},
		{"ssh host as an option", map[string]any{"spec.nodes[1].ssh": map[string]any{"host": "-oProxyCommand=sh"}}, "S106", E, "spec.nodes[1].ssh.host", []string{"neither an IP address nor a DNS name"}},
		{"ssh host with a zone", map[string]any{"spec.nodes[1].ssh": map[string]any{"host": "fe80::1%eth0"}}, "S106", E, "spec.nodes[1].ssh.host", nil},
		// S002: the cluster name is a DNS label.
		{"cluster name 63", map[string]any{"metadata.name": strings.Repeat("c", 63)}, "S002", "", "", nil},
		{"cluster name 64", map[string]any{"metadata.name": strings.Repeat("c", 64)}, "S002", E, "metadata.name", nil},
	}
}

// TestRuleBoundaries tests every numeric and length limit of Rules() at the
// last accepted and the first refused value, and the numbers in the
// messages.
func TestRuleBoundaries(t *testing.T) {
	cases := boundaryCases()
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
	// Every rule with a numeric or length limit appears on both sides.
	sides := map[string][2]bool{}
	for _, c := range cases {
		s := sides[c.rule]
		if c.sev == "" {
			s[0] = true
		} else {
			s[1] = true
		}
		sides[c.rule] = s
	}
	for _, id := range []string{"S002", "S102", "S103", "S105", "S106", "S108", "S201", "S202", "S203", "S301", "S303", "S403", "S404", "S501", "S502", "S503", "S109"} {
		if s := sides[id]; !s[0] || !s[1] {
			t.Errorf("%s: boundary cases on both sides = %v", id, s)
		}
	}
}

// TestVariantHelper: the edit helper really edits (so the boundary tests
// cannot pass by testing the unmodified lab).
func TestVariantHelper(t *testing.T) {
	b := string(variant(t, map[string]any{"spec.network.blockSize": 27, "spec.nodes[+]": node("x", "worker", "linux", "192.168.10.99")}))
	if !strings.Contains(b, "blockSize: 27") || !strings.Contains(b, "192.168.10.99") {
		t.Fatalf("variant did not apply the edits:\n%s", b)
	}
	if r := Parse("cluster.yaml", variant(t, nil)); len(r.Diagnostics.Errors()) > 0 {
		t.Fatalf("the unmodified base has errors: %v", fmt.Sprint(r.Diagnostics))
	}
}

// TestSpecSizeLimit: a spec file of exactly MaxSpecBytes is read whole; one
// byte more is refused, naming the file and the limit.
func TestSpecSizeLimit(t *testing.T) {
	base := variant(t, nil)
	dir := t.TempDir()
	write := func(name string, size int) string {
		t.Helper()
		pad := size - len(base) - 1
		if pad < 2 {
			t.Fatalf("the lab spec is %d bytes, no room for padding", len(base))
		}
		// A trailing comment pads the file to the size wanted.
		b := append(append(append([]byte{}, base...), '#'), strings.Repeat("x", pad)...)
		path := dir + "/" + name
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	at := write("at.yaml", MaxSpecBytes)
	r, err := LoadFile(t.Context(), at)
	if err != nil {
		t.Fatalf("a spec of exactly %d bytes: %v", MaxSpecBytes, err)
	}
	if r.Cluster == nil || len(r.Diagnostics.Errors()) != 0 {
		t.Fatalf("a spec of exactly %d bytes was not read whole: %v", MaxSpecBytes, r.Diagnostics)
	}
	over := write("over.yaml", MaxSpecBytes+1)
	_, err = LoadFile(t.Context(), over)
	if err == nil || !strings.Contains(err.Error(), over) || !strings.Contains(err.Error(), "larger than "+strconv.Itoa(MaxSpecBytes)+" bytes") {
		t.Fatalf("a spec of %d bytes: %v", MaxSpecBytes+1, err)
	}
}

// TestDiagnosticOrderAndFormat: diagnostics read top to bottom (line, then
// path, then message), and a diagnostic without a line names only its file.
func TestDiagnosticOrderAndFormat(t *testing.T) {
	ds := Diagnostics{
		{Line: 9, Path: "spec.a", Message: "a"},
		{Line: 3, Path: "spec.b", Message: "b"},
		{Line: 3, Path: "spec.a", Message: "z"},
		{Line: 3, Path: "spec.a", Message: "c", Rule: "S1"},
		{Line: 10, Path: "spec.0", Message: "0"},
		{Line: 3, Path: "spec.a", Message: "c", Rule: "S2"},
	}
	ds.sort()
	var got []string
	for _, d := range ds {
		got = append(got, strings.TrimSpace(fmt.Sprintf("%d %s %s %s", d.Line, d.Path, d.Message, d.Rule)))
	}
	// Equal places and messages keep their order (the sort is stable).
	want := "3 spec.a c S1|3 spec.a c S2|3 spec.a z|3 spec.b b|9 spec.a a|10 spec.0 0"
	if strings.Join(got, "|") != want {
		t.Errorf("order %q, want %q", strings.Join(got, "|"), want)
	}
	for _, c := range []struct {
		d    Diagnostic
		want string
	}{
		{Diagnostic{File: "c.yaml", Line: 0, Path: "spec", Message: "m"}, "c.yaml: spec: m"},
		{Diagnostic{File: "c.yaml", Line: 1, Path: "spec", Message: "m"}, "c.yaml:1: spec: m"},
		{Diagnostic{File: "c.yaml", Line: 2, Severity: finding.Warning, Message: "m", Rule: "S101", Name: "n"}, "c.yaml:2: warning: m [S101 n]"},
	} {
		if got := c.d.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.d, got, c.want)
		}
	}
}

// TestControlPlaneCount: S404 says exactly one thing about the count of
// control-plane nodes: none is an error without the even-count warning (0
// is even), and a spec without nodes is left to S106.
func TestControlPlaneCount(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits map[string]any
		want  string
	}{
		{"no control plane", map[string]any{"spec.nodes[0].role": "worker"}, "error spec.nodes: has no control-plane node"},
		{"no nodes", map[string]any{"spec.nodes": []any{}}, ""},
		{"one control plane", nil, ""},
		{"two control planes", map[string]any{"spec.nodes[1].role": "control-plane"}, "warning spec.nodes: has 2 control-plane nodes; an even number of etcd members tolerates no more failures than one fewer"},
	} {
		r := Parse("cluster.yaml", variant(t, c.edits))
		var got []string
		for _, d := range r.Diagnostics {
			if d.Rule == "S404" {
				got = append(got, fmt.Sprintf("%s %s: %s", d.Severity, d.Path, d.Message))
			}
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("%s: S404 diagnostics\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), c.want)
		}
	}
}

// TestNodeCountLimit: MaxNodes nodes are a valid spec, one more is refused
// with S110 and nothing else; the fixture holds MaxNodes+1.
func TestNodeCountLimit(t *testing.T) {
	src := mustRead(t, "testdata/invalid/S110-node-count.yaml")
	r := Parse("big.yaml", []byte(src))
	errs := r.Diagnostics.Errors()
	if len(errs) != 1 || errs[0].Rule != "S110" || !strings.Contains(errs[0].Message, "has 5001 nodes") || !strings.Contains(errs[0].Message, "at most 5000") {
		t.Fatalf("%d+1 nodes: want one S110 error, got:\n%s", MaxNodes, diagText(r.Diagnostics))
	}
	if r.Cluster != nil {
		t.Errorf("%d+1 nodes: the list was decoded", MaxNodes)
	}
	// Refused before anything else is checked: a second problem waits.
	r = Parse("big.yaml", []byte(strings.Replace(src, "gateway: 10.1.0.1", "gateway: 10.9.0.1", 1)))
	if errs := r.Diagnostics.Errors(); len(errs) != 1 || errs[0].Rule != "S110" || errs[0].Line != 14 {
		t.Errorf("%d+1 nodes and a bad gateway: want only S110 at line 14, got:\n%s", MaxNodes, diagText(r.Diagnostics))
	}
	// In flow style too.
	flow := strings.Replace(strings.Replace(src, "\n  - {", ", {", -1), "  nodes:, {", "  nodes: [{", 1)
	flow = strings.TrimSuffix(flow, "\n") + "]\n"
	r = Parse("big.yaml", []byte(flow))
	if errs := r.Diagnostics.Errors(); len(errs) != 1 || errs[0].Rule != "S110" {
		t.Errorf("%d+1 nodes in flow style: got:\n%s", MaxNodes, diagText(r.Diagnostics))
	}
	last := strings.LastIndex(strings.TrimSuffix(src, "\n"), "\n")
	r = Parse("big.yaml", []byte(src[:last+1]))
	if len(r.Diagnostics) != 0 || len(r.Cluster.Spec.Nodes) != MaxNodes {
		t.Fatalf("%d nodes: want a valid spec of %d nodes, got %d nodes and:\n%s", MaxNodes, MaxNodes, len(r.Cluster.Spec.Nodes), diagText(r.Diagnostics))
	}
}
