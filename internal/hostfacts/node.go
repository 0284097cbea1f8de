package hostfacts

import (
	"net/netip"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// Node is what the node script found on a cluster's node, parsed: its
// services, container runtime, kubelet log, API reachability, clock, CNI
// configuration and overlay network state (what node diagnose's checks
// read).
type Node struct {
	// Node is the node's name, OS its operating system.
	Node string
	OS   engine.OS

	// Services are the node services the script asked about, by name
	// (missing ones have Found false).
	Services map[string]Service
	// ServiceEvents are Windows Service Control Manager events about
	// containerd or kubelet in the last 24 hours (newest first).
	ServiceEvents []ServiceEvent

	CRI Probe
	// CRIConditions are crictl info's status.conditions (RuntimeReady,
	// NetworkReady) when it answered.
	CRIConditions []CRICondition

	// KubeletLog is the tail of the kubelet's log, oldest first.
	KubeletLog []LogLine
	// KubeletLogSource names where the lines came from.
	KubeletLogSource string
	// KubeletLogError is why the log could not be read ("" when it was).
	KubeletLogError string

	API Probe

	Clock Clock

	// CNIDir is the CNI configuration directory; CNIFiles the
	// configuration files found in it (*.conf, *.conflist, *.json).
	CNIDir   string
	CNIFiles []CNIFile
	// CNIError is why the directory could not be read.
	CNIError string

	Linux   *LinuxNet
	Windows *WindowsNet

	// Raw are the outputs as gathered, for --collect (not yet redacted).
	Raw []RawFile
}

// Service is one service's state, in the OS's own (non-localised) terms.
type Service struct {
	Name  string
	Found bool
	// Running: systemd ActiveState=active, Windows Status=Running.
	Running bool
	// State is the raw state (active/failed/inactive, Running/Stopped).
	State string
	// StartType is systemd's UnitFileState (enabled, disabled, static) or
	// Windows' StartType (Automatic, Manual, Disabled).
	StartType string
}

// ServiceEvent is a Service Control Manager event (System log).
type ServiceEvent struct {
	ID      int
	Time    time.Time
	Service string
	Message string
}

// Probe is the outcome of a command that either worked or did not.
type Probe struct {
	Ran    bool // false: the probe itself could not run (tool missing)
	OK     bool
	Detail string // the failure, or what answered
}

// CRICondition is one of crictl info's status conditions.
type CRICondition struct {
	Type    string `json:"type"`
	Status  bool   `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// LogLine is one kubelet log line. Time is zero when the line has no
// timestamp the parser understands (such lines are never "recent").
type LogLine struct {
	Time time.Time
	Text string
}

// CNIFile is one CNI configuration file.
type CNIFile struct {
	Name string
	// Valid is false when the content is not a CNI configuration (not
	// JSON, or without a type or plugins list); Problem says why.
	Valid   bool
	Problem string
	// NetworkName and Types are the configuration's name and plugin types.
	NetworkName string
	Types       []string
}

// LinuxNet is the Linux node's network state relevant to the overlay.
type LinuxNet struct {
	Links  []Link
	Addrs  map[string][]netip.Prefix // by device
	Routes []Route
	Neigh  []Neigh
	FDB    []FDB
	// UDPPorts are the local UDP ports with a bound socket (from
	// /proc/net/udp), which include the kernel's VXLAN sockets.
	UDPPorts map[int]bool
}

// LinkNamed returns the device called name.
func (n *LinuxNet) LinkNamed(name string) (Link, bool) {
	for _, l := range n.Links {
		if l.Name == name {
			return l, true
		}
	}
	return Link{}, false
}

// Link is a network device.
type Link struct {
	Name  string
	Kind  string // "vxlan", "bridge", ... ("" for a plain device)
	MAC   string // lower case, colon separated
	Up    bool
	MTU   int
	VNI   int // VXLAN only
	Port  int // VXLAN only: the UDP destination port
	Local string
}

// Route is one IPv4 route of the main table.
type Route struct {
	Dst      netip.Prefix
	Gateway  netip.Addr
	Dev      string
	Protocol string
	OnLink   bool
	Raw      string // as ip(8) would print it, for messages
}

// Neigh is a neighbour (ARP) entry.
type Neigh struct {
	Dst   netip.Addr
	MAC   string
	Dev   string
	State string
}

// FDB is a forwarding database entry of a VXLAN device.
type FDB struct {
	MAC string
	Dst netip.Addr
	Dev string
}

// WindowsNet is the Windows node's HNS state relevant to the overlay.
type WindowsNet struct {
	Networks []HNSNetwork
	// Error is why Get-HnsNetwork failed ("" when it ran).
	Error string
	// Firewall is the OverlayTraffic4789UDP rule, nil when absent.
	Firewall *FirewallRule
}

// NetworkNamed returns the HNS network called name (HNS compares names
// without regard to case).
func (w *WindowsNet) NetworkNamed(name string) (HNSNetwork, bool) {
	for _, n := range w.Networks {
		if strings.EqualFold(n.Name, name) {
			return n, true
		}
	}
	return HNSNetwork{}, false
}

// HNSNetwork is one HNS network (Get-HnsNetwork).
type HNSNetwork struct {
	Name         string
	Type         string
	ManagementIP string
	DrMAC        string
	Subnets      []netip.Prefix
	Gateways     []netip.Addr
	VSID         int
	Routes       []RemoteSubnetRoute
}

// RemoteSubnetRoute is an HNS network policy: a remote block, the node
// address behind it and the MAC of its VTEP.
type RemoteSubnetRoute struct {
	Prefix   netip.Prefix
	Provider netip.Addr
	MAC      string
	VSID     int
}

// FirewallRule is a Windows firewall rule's state.
type FirewallRule struct {
	Enabled   bool
	Direction string
	Action    string
}

// RawFile is one raw output saved by --collect.
type RawFile struct {
	Name string
	Data []byte
}
