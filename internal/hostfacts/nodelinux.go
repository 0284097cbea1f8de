package hostfacts

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// NodeLinuxScript is the Linux node script: POSIX sh, read-only. It takes
// its inputs as arguments (NodeLinuxArgs: marker, API host, API port).
//
//go:embed scripts/node.sh
var NodeLinuxScript string

// ParseNodeLinux turns the Linux node script's output into Node. Malformed parts
// become problems in the facts (a probe that did not run, a parse error in
// Detail) rather than an error: one unreadable table does not hide the rest.
func ParseNodeLinux(node string, out []byte, marker string) (*Node, error) {
	secs, err := Split(out, marker)
	if errors.Is(err, ErrNoSections) {
		return nil, fmt.Errorf("%s: the gathering script printed no sections (not a POSIX shell, or its output was lost)", node)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading the gathering script's output: %w", node, err)
	}
	f := &Node{Node: node, OS: engine.Linux, Services: map[string]Service{}, CNIDir: "/etc/cni/net.d",
		Linux: &LinuxNet{Addrs: map[string][]netip.Prefix{}, UDPPorts: map[int]bool{}}}
	f.KubeletLogSource = "journalctl -u kubelet"
	var linkErr string
	for _, s := range secs {
		raw := s.Name
		switch {
		case s.Name == "clock":
			f.Clock.Detail = strings.TrimSpace(s.Out)
			if ns, err := strconv.ParseInt(strings.TrimSpace(s.Out), 10, 64); err == nil && s.RC == 0 {
				f.Clock.Node = time.Unix(0, ns).UTC()
				f.Clock.Sampled = true
			}
		case s.Name == "time-sync":
			if v, ok := strings.CutPrefix(strings.TrimSpace(s.Out), "NTPSynchronized="); ok && s.RC == 0 {
				f.Clock.Synced = v
			}
		case s.Name == "services":
			parseSystemd(f, s)
		case s.Name == "crictl":
			f.CRI = Probe{Ran: s.RC != 127, OK: s.RC == 0, Detail: tail(s.Out, 5)}
			if s.RC == 0 {
				conds, status, err := criStatus([]byte(s.Out))
				if err != nil {
					f.CRI.Detail = "crictl info answered, but: " + err.Error()
				} else {
					f.CRIConditions = conds
					f.CRI.Detail = "crictl info answered"
				}
				// Only the status goes to --collect: the rest of crictl
				// info is containerd's configuration, registry
				// credentials included.
				f.Raw = append(f.Raw, RawFile{Name: "crictl-info-status.json", Data: status})
				continue
			}
		case s.Name == "kubelet-log":
			if s.RC != 0 {
				f.KubeletLogError = tail(s.Out, 3)
			}
			f.KubeletLog = parseJournal(s.Out)
		case s.Name == "api":
			f.API = Probe{Ran: s.RC != 127, OK: s.RC == 0 && strings.Contains(s.Out, "connected"), Detail: strings.TrimSpace(s.Out)}
		case s.Name == "cni-dir":
			if s.RC != 0 {
				f.CNIError = strings.TrimSpace(s.Out)
			}
		case strings.HasPrefix(s.Name, "cni-file "):
			name := strings.TrimPrefix(s.Name, "cni-file ")
			f.CNIFiles = append(f.CNIFiles, parseCNI(path.Base(name), []byte(s.Out)))
			raw = "cni/" + path.Base(name)
		case s.Name == "links":
			if err := parseLinks(f.Linux, []byte(s.Out)); err != nil {
				linkErr = err.Error()
			}
		case s.Name == "addrs":
			parseAddrs(f.Linux, []byte(s.Out))
		case s.Name == "routes":
			parseRoutes(f.Linux, []byte(s.Out))
		case strings.HasPrefix(s.Name, "neigh "):
			parseNeigh(f.Linux, strings.TrimPrefix(s.Name, "neigh "), []byte(s.Out))
		case strings.HasPrefix(s.Name, "fdb "):
			parseFDB(f.Linux, strings.TrimPrefix(s.Name, "fdb "), []byte(s.Out))
		case s.Name == "udp":
			f.Linux.UDPPorts = parseProcUDP(s.Out)
		}
		f.Raw = append(f.Raw, RawFile{Name: rawName(raw), Data: []byte(s.Out)})
	}
	if linkErr != "" {
		f.Linux.Links = nil
	}
	return f, nil
}

// rawName makes a section name a relative file name.
func rawName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r) {
			return r
		}
		return '-'
	}, s)
	s = strings.ReplaceAll(s, "..", "-")
	s = strings.Trim(s, "/")
	if s == "" {
		s = "section"
	}
	return s + ".txt"
}

// tail is the last n non-empty lines of s.
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimRight(l, "\r"))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func parseSystemd(f *Node, s Section) {
	for _, block := range strings.Split(s.Out, "\n\n") {
		kv := map[string]string{}
		for _, l := range strings.Split(block, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
				kv[k] = v
			}
		}
		name := strings.TrimSuffix(kv["Id"], ".service")
		if name == "" {
			continue
		}
		f.Services[name] = Service{Name: name, Found: kv["LoadState"] == "loaded",
			Running: kv["ActiveState"] == "active", State: kv["ActiveState"] + "/" + kv["SubState"], StartType: kv["UnitFileState"]}
	}
}

// criStatus reads crictl info's status.conditions and returns the status
// object alone (re-encoded) for --collect.
func criStatus(b []byte) ([]CRICondition, []byte, error) {
	var info struct {
		Status struct {
			Conditions []CRICondition `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, nil, fmt.Errorf("its output is not JSON: %w", err)
	}
	st, _ := json.MarshalIndent(info.Status, "", "  ")
	return info.Status.Conditions, st, nil
}

// parseJournal reads journalctl -o short-unix lines ("1733105311.123456
// host kubelet[123]: message").
func parseJournal(out string) []LogLine {
	var lines []LogLine
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "-- ") {
			continue
		}
		ts, rest, ok := strings.Cut(l, " ")
		var t time.Time
		if u, isTime := unixTime(ts); ok && isTime {
			t = u
			if _, msg, ok := strings.Cut(rest, ": "); ok {
				rest = msg
			}
			l = rest
		}
		lines = append(lines, LogLine{Time: t, Text: l})
	}
	return lines
}

// unixTime reads journalctl's "SECONDS.MICROSECONDS" (any number of
// fraction digits up to nanoseconds) as a time after 1970 and before the
// year 5138 (10^11 s); anything else is not a time. Seconds and fraction
// are read as integers: a float's nanoseconds overflow int64 after 2262.
func unixTime(s string) (time.Time, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || sec == 0 || sec >= 1e11 || len(frac) > 9 || strings.Trim(frac, "0123456789") != "" {
		return time.Time{}, false
	}
	ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
	return time.Unix(int64(sec), ns).UTC(), true
}

// parseCNI checks that data is a CNI configuration: a .conflist with
// plugins, or a single .conf with a type.
func parseCNI(name string, data []byte) CNIFile {
	f := CNIFile{Name: name}
	var c struct {
		Name    string `json:"name"`
		Type    string `json:"type"`
		Plugins []struct {
			Type string `json:"type"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		f.Problem = "not JSON: " + err.Error()
		return f
	}
	f.NetworkName = c.Name
	if c.Type != "" {
		f.Types = append(f.Types, c.Type)
	}
	for _, p := range c.Plugins {
		if p.Type != "" {
			f.Types = append(f.Types, p.Type)
		}
	}
	switch {
	case len(f.Types) == 0:
		f.Problem = "names no plugin type"
	case c.Name == "":
		f.Problem = "has no network name"
	default:
		f.Valid = true
	}
	return f
}

func parseLinks(n *LinuxNet, b []byte) error {
	var links []struct {
		IfName   string   `json:"ifname"`
		Address  string   `json:"address"`
		Flags    []string `json:"flags"`
		MTU      int      `json:"mtu"`
		LinkInfo struct {
			Kind string `json:"info_kind"`
			Data struct {
				ID    int    `json:"id"`
				Port  int    `json:"port"`
				Local string `json:"local"`
			} `json:"info_data"`
		} `json:"linkinfo"`
	}
	if err := json.Unmarshal(b, &links); err != nil {
		return fmt.Errorf("ip -j link: %w", err)
	}
	for _, l := range links {
		lk := Link{Name: l.IfName, Kind: l.LinkInfo.Kind, MAC: NormMAC(l.Address), MTU: l.MTU}
		for _, fl := range l.Flags {
			if fl == "UP" {
				lk.Up = true
			}
		}
		if lk.Kind == "vxlan" {
			lk.VNI, lk.Port, lk.Local = l.LinkInfo.Data.ID, l.LinkInfo.Data.Port, l.LinkInfo.Data.Local
		}
		n.Links = append(n.Links, lk)
	}
	return nil
}

func parseAddrs(n *LinuxNet, b []byte) {
	var ifs []struct {
		IfName   string `json:"ifname"`
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if json.Unmarshal(b, &ifs) != nil {
		return
	}
	for _, i := range ifs {
		for _, a := range i.AddrInfo {
			ip, err := netip.ParseAddr(a.Local)
			if err != nil || a.PrefixLen < 0 || a.PrefixLen > ip.BitLen() {
				continue
			}
			n.Addrs[i.IfName] = append(n.Addrs[i.IfName], netip.PrefixFrom(ip, a.PrefixLen))
		}
	}
}

func parseRoutes(n *LinuxNet, b []byte) {
	var rs []struct {
		Dst      string   `json:"dst"`
		Gateway  string   `json:"gateway"`
		Dev      string   `json:"dev"`
		Protocol string   `json:"protocol"`
		Flags    []string `json:"flags"`
	}
	if json.Unmarshal(b, &rs) != nil {
		return
	}
	for _, r := range rs {
		if r.Dst == "default" {
			continue
		}
		dst, err := parsePrefix(r.Dst)
		if err != nil {
			continue
		}
		rt := Route{Dst: dst, Dev: r.Dev, Protocol: r.Protocol}
		if g, err := netip.ParseAddr(r.Gateway); err == nil {
			rt.Gateway = g
		}
		for _, f := range r.Flags {
			if f == "onlink" {
				rt.OnLink = true
			}
		}
		rt.Raw = dst.String()
		if rt.Gateway.IsValid() {
			rt.Raw += " via " + rt.Gateway.String()
		}
		if rt.Dev != "" {
			rt.Raw += " dev " + rt.Dev
		}
		if rt.OnLink {
			rt.Raw += " onlink"
		}
		n.Routes = append(n.Routes, rt)
	}
}

// parsePrefix reads a CIDR or a bare address (a host route).
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func parseNeigh(n *LinuxNet, dev string, b []byte) {
	var ns []struct {
		Dst    string   `json:"dst"`
		LLAddr string   `json:"lladdr"`
		State  []string `json:"state"`
	}
	if json.Unmarshal(b, &ns) != nil {
		return
	}
	for _, e := range ns {
		a, err := netip.ParseAddr(e.Dst)
		if err != nil {
			continue
		}
		n.Neigh = append(n.Neigh, Neigh{Dst: a, MAC: NormMAC(e.LLAddr), Dev: dev, State: strings.Join(e.State, ",")})
	}
}

func parseFDB(n *LinuxNet, dev string, b []byte) {
	var es []struct {
		MAC string `json:"mac"`
		Dst string `json:"dst"`
	}
	if json.Unmarshal(b, &es) != nil {
		return
	}
	for _, e := range es {
		a, err := netip.ParseAddr(e.Dst)
		if err != nil {
			continue // the device's own entries have no destination
		}
		n.FDB = append(n.FDB, FDB{MAC: NormMAC(e.MAC), Dst: a, Dev: dev})
	}
}

// parseProcUDP reads the local ports of /proc/net/udp.
func parseProcUDP(out string) map[int]bool {
	ports := map[int]bool{}
	for _, l := range strings.Split(out, "\n") {
		fs := strings.Fields(l)
		if len(fs) < 2 || !strings.HasSuffix(fs[0], ":") {
			continue
		}
		_, hex, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hex, 16, 16); err == nil {
			ports[int(p)] = true
		}
	}
	return ports
}

// NormMAC writes a MAC address as lower-case, colon-separated pairs (HNS
// writes 66-EE-F4-61-98-50, ip(8) 66:ee:f4:61:98:50). Anything that is not
// six pairs is returned lower-cased as is.
func NormMAC(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	t := strings.ReplaceAll(s, "-", ":")
	parts := strings.Split(t, ":")
	if len(parts) != 6 {
		return s
	}
	for _, p := range parts {
		if len(p) != 2 || strings.Trim(p, "0123456789abcdef") != "" {
			return s
		}
	}
	return t
}
