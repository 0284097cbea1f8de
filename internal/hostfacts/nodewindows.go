package hostfacts

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// NodeWindowsScript is the Windows node script (PowerShell 5.1). Its
// inputs come as one JSON line on standard input (NodeWindowsInput); it
// prints one JSON object.
//
//go:embed scripts/node.ps1
var NodeWindowsScript string

// many is a JSON value PowerShell may write as an array, a single object
// (a one-element array unrolled) or null (an empty one).
type many[T any] []T

func (m *many[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*m = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var xs []T
		if err := json.Unmarshal(b, &xs); err != nil {
			return err
		}
		*m = xs
		return nil
	}
	var x T
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*m = []T{x}
	return nil
}

// probe is the script's Get-Probe result.
type probe[T any] struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Value T      `json:"value"`
}

type winOutput struct {
	Clock     probe[json.Number] `json:"clock"`
	UTCOffset probe[int]         `json:"utcOffsetMinutes"`
	Services  probe[many[struct {
		Name      string `json:"name"`
		Status    string `json:"status"`
		StartType string `json:"startType"`
	}]] `json:"services"`
	ServiceEvents probe[many[struct {
		ID      int    `json:"id"`
		Time    string `json:"time"`
		Service string `json:"service"`
		Message string `json:"message"`
	}]] `json:"serviceEvents"`
	CRI probe[struct {
		Ran    bool   `json:"ran"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
		Status *struct {
			Conditions many[CRICondition] `json:"conditions"`
		} `json:"status"`
	}] `json:"cri"`
	KubeletLog    probe[many[string]] `json:"kubeletLog"`
	API           probe[string]       `json:"api"`
	W32tm         probe[string]       `json:"w32tm"`
	ContainerdLog probe[many[string]] `json:"containerdLog"`
	CalicoCNILog  probe[many[string]] `json:"calicoCNILog"`
	CNI           probe[many[struct {
		Name    string `json:"name"`
		Content string `json:"content"`
	}]] `json:"cni"`
	HNS      probe[many[hnsNetwork]] `json:"hns"`
	Firewall probe[*struct {
		Enabled   string `json:"enabled"`
		Direction string `json:"direction"`
		Action    string `json:"action"`
	}] `json:"firewall"`
}

type hnsPolicy struct {
	Type                        string `json:"Type"`
	DestinationPrefix           string `json:"DestinationPrefix"`
	ProviderAddress             string `json:"ProviderAddress"`
	DistributedRouterMacAddress string `json:"DistributedRouterMacAddress"`
	IsolationID                 int    `json:"IsolationId"`
	VSID                        int    `json:"VSID"`
}

type hnsNetwork struct {
	Name         string `json:"name"`
	Type         string `json:"type"`
	ManagementIP string `json:"managementIP"`
	DrMAC        string `json:"drMacAddress"`
	Subnets      many[struct {
		AddressPrefix  string          `json:"addressPrefix"`
		GatewayAddress string          `json:"gatewayAddress"`
		Policies       many[hnsPolicy] `json:"policies"`
	}] `json:"subnets"`
	Policies many[hnsPolicy] `json:"policies"`
}

// ParseNodeWindows turns the Windows node script's JSON into Node.
func ParseNodeWindows(node string, out []byte) (*Node, error) {
	out = bytes.TrimSpace(bytes.TrimPrefix(out, []byte("\xef\xbb\xbf")))
	// PowerShell may print warnings before the object; the object is the
	// last line.
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	var w winOutput
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%s: the Windows gathering script's output is not the expected JSON: %w", node, err)
	}
	f := &Node{Node: node, OS: engine.Windows, Services: map[string]Service{}, CNIDir: `C:\etc\cni\net.d`,
		KubeletLogSource: `C:\var\log\kubelet\kubelet.err.log`, Windows: &WindowsNet{}}
	f.Raw = append(f.Raw, RawFile{Name: "gather.json", Data: append([]byte(nil), out...)})

	if ms, err := w.Clock.Value.Int64(); w.Clock.OK && err == nil {
		f.Clock = Clock{Sampled: true, Node: time.UnixMilli(ms).UTC()}
	} else {
		f.Clock.Detail = w.Clock.Error
	}
	if w.Services.OK {
		for _, s := range w.Services.Value {
			f.Services[strings.ToLower(s.Name)] = Service{Name: s.Name, Found: true, Running: s.Status == "Running", State: s.Status, StartType: s.StartType}
		}
	}
	for _, e := range w.ServiceEvents.Value {
		t, _ := time.Parse(time.RFC3339Nano, e.Time)
		f.ServiceEvents = append(f.ServiceEvents, ServiceEvent{ID: e.ID, Time: t, Service: e.Service, Message: strings.TrimSpace(e.Message)})
	}
	if w.CRI.OK {
		c := w.CRI.Value
		f.CRI = Probe{Ran: c.Ran, OK: c.OK, Detail: tail(c.Detail, 5)}
		if c.Status != nil {
			f.CRIConditions = c.Status.Conditions
			st, _ := json.MarshalIndent(c.Status, "", "  ")
			f.Raw = append(f.Raw, RawFile{Name: "crictl-info-status.json", Data: st})
		}
	} else {
		f.CRI = Probe{Ran: false, Detail: w.CRI.Error}
	}
	if w.KubeletLog.OK {
		f.KubeletLog = parseKlogLines(w.KubeletLog.Value, f.Clock.Node, time.Duration(w.UTCOffset.Value)*time.Minute)
		f.Raw = append(f.Raw, RawFile{Name: "kubelet.err.log.tail", Data: []byte(strings.Join(w.KubeletLog.Value, "\n") + "\n")})
	} else {
		f.KubeletLogError = w.KubeletLog.Error
	}
	f.API = Probe{Ran: true, OK: w.API.OK && w.API.Value == "connected", Detail: w.API.Value}
	if !w.API.OK {
		f.API.Detail = w.API.Error
	}
	if w.W32tm.OK {
		f.Raw = append(f.Raw, RawFile{Name: "w32tm-status.txt", Data: []byte(w.W32tm.Value)})
	}
	if w.ContainerdLog.OK {
		f.Raw = append(f.Raw, RawFile{Name: "containerd.log.tail", Data: []byte(strings.Join(w.ContainerdLog.Value, "\n") + "\n")})
	}
	if w.CalicoCNILog.OK {
		f.Raw = append(f.Raw, RawFile{Name: "calico-cni.log.tail", Data: []byte(strings.Join(w.CalicoCNILog.Value, "\n") + "\n")})
	}
	if w.CNI.OK {
		for _, c := range w.CNI.Value {
			f.CNIFiles = append(f.CNIFiles, parseCNI(c.Name, []byte(c.Content)))
			f.Raw = append(f.Raw, RawFile{Name: rawName("cni/" + c.Name), Data: []byte(c.Content)})
		}
	} else {
		f.CNIError = w.CNI.Error
	}
	if w.HNS.OK {
		for _, n := range w.HNS.Value {
			f.Windows.Networks = append(f.Windows.Networks, convertHNS(n))
		}
	} else {
		f.Windows.Error = w.HNS.Error
	}
	if w.Firewall.OK && w.Firewall.Value != nil {
		fw := w.Firewall.Value
		f.Windows.Firewall = &FirewallRule{Enabled: fw.Enabled == "True", Direction: fw.Direction, Action: fw.Action}
	}
	return f, nil
}

func convertHNS(n hnsNetwork) HNSNetwork {
	h := HNSNetwork{Name: n.Name, Type: n.Type, ManagementIP: n.ManagementIP, DrMAC: NormMAC(n.DrMAC)}
	for _, s := range n.Subnets {
		if p, err := parsePrefix(s.AddressPrefix); err == nil {
			h.Subnets = append(h.Subnets, p)
		}
		if g, err := netip.ParseAddr(s.GatewayAddress); err == nil {
			h.Gateways = append(h.Gateways, g)
		}
		for _, p := range s.Policies {
			if strings.EqualFold(p.Type, "VSID") {
				h.VSID = p.VSID
			}
		}
	}
	for _, p := range n.Policies {
		if !strings.EqualFold(p.Type, "RemoteSubnetRoute") {
			continue
		}
		r := RemoteSubnetRoute{MAC: NormMAC(p.DistributedRouterMacAddress), VSID: p.IsolationID}
		r.Prefix, _ = parsePrefix(p.DestinationPrefix)
		r.Provider, _ = netip.ParseAddr(p.ProviderAddress)
		h.Routes = append(h.Routes, r)
	}
	return h
}

// parseKlogLines reads klog lines ("E1106 23:16:46.123456 ..."): the
// header has month and day but no year, taken from the node's clock (a
// date after it is last year's), in the node's local time (offset from UTC).
func parseKlogLines(lines []string, now time.Time, offset time.Duration) []LogLine {
	var out []LogLine
	for _, l := range lines {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		out = append(out, LogLine{Time: klogTime(l, now, offset), Text: l})
	}
	return out
}

func klogTime(l string, now time.Time, offset time.Duration) time.Time {
	if len(l) < 21 || !strings.ContainsRune("IWEF", rune(l[0])) || now.IsZero() {
		return time.Time{}
	}
	t, err := time.Parse("0102 15:04:05.000000", l[1:21])
	if err != nil {
		return time.Time{}
	}
	y := now.Year()
	t = time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC).Add(-offset)
	if t.After(now.Add(24 * time.Hour)) {
		t = t.AddDate(-1, 0, 0)
	}
	return t
}
