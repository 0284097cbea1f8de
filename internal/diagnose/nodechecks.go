package diagnose

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/hostfacts"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// RecentLog is how far back the kubelet log's errors count.
const RecentLog = 15 * time.Minute

// scmFailures are Service Control Manager event IDs that say a service
// failed (7036, "entered the running state", and the like are not).
var scmFailures = map[int]string{
	7000: "failed to start", 7001: "a dependency failed", 7009: "timed out starting", 7011: "timed out answering",
	7022: "hung on starting", 7023: "terminated with an error", 7024: "terminated with a service error",
	7031: "terminated unexpectedly", 7034: "terminated unexpectedly",
}

func checkServices(c *Ctx) {
	f := c.Facts
	if len(f.Services) == 0 {
		c.Skip("the node's service manager could not be queried", true)
		return
	}
	events := map[string][]hostfacts.ServiceEvent{}
	for _, e := range f.ServiceEvents {
		if _, bad := scmFailures[e.ID]; bad {
			events[strings.ToLower(e.Service)] = append(events[strings.ToLower(e.Service)], e)
		}
	}
	for _, name := range []string{"containerd", "kubelet"} {
		s := f.Services[name]
		var ev []string
		for _, e := range events[name] {
			ev = append(ev, fmt.Sprintf("%s Service Control Manager event %d (%s): %s", e.Time.Format(time.RFC3339), e.ID, scmFailures[e.ID], oneLine(e.Message, 200)))
		}
		switch {
		case !s.Found:
			c.Report(finding.Error, fmt.Sprintf("%s is not installed as a service on %s", name, f.Node),
				"run the node's preparation again (hybridctl apply, or the rendered prepare script)", ev...)
		case !s.Running:
			msg := fmt.Sprintf("%s is not running on %s (%s)", name, f.Node, s.State)
			if name == "kubelet" && !f.Services["containerd"].Running {
				msg += "; the kubelet does not start without containerd"
			}
			if len(ev) > 0 {
				msg += fmt.Sprintf("; the Service Control Manager logged %d failure(s) in the last 24 h", len(ev))
			}
			c.Report(finding.Error, msg, startFix(f.OS, name), append([]string{"state: " + s.State + ", start type: " + s.StartType}, ev...)...)
		case !startsAtBoot(f.OS, s.StartType):
			c.Report(finding.Warning, fmt.Sprintf("%s runs but does not start at boot on %s (start type %s)", name, f.Node, s.StartType),
				enableFix(f.OS, name))
		case len(ev) > 0:
			c.Report(finding.Warning, fmt.Sprintf("%s runs, but the Service Control Manager logged %d failure(s) of it in the last 24 h on %s", name, len(ev), f.Node),
				"read the events (Get-WinEvent -FilterHashtable @{LogName='System'; ProviderName='Service Control Manager'}) and the service's own log", ev...)
		}
	}
	if f.OS != engine.Windows {
		return
	}
	for _, name := range []string{"hns", "vmcompute"} {
		s := f.Services[name]
		switch {
		case !s.Found:
			c.Report(finding.Error, fmt.Sprintf("the %s service does not exist on %s: the Containers feature is not installed", name, f.Node),
				"Install-WindowsFeature -Name Containers, then restart the node")
		case strings.EqualFold(s.StartType, "Disabled"):
			c.Report(finding.Error, fmt.Sprintf("%s is Disabled on %s: containerd and the CNI plugin start it on demand", name, f.Node),
				fmt.Sprintf("Set-Service -Name %s -StartupType Manual", name))
		}
	}
}

func startsAtBoot(os engine.OS, startType string) bool {
	if os == engine.Windows {
		return strings.HasPrefix(startType, "Automatic")
	}
	switch startType {
	case "enabled", "enabled-runtime", "static", "alias", "generated", "indirect":
		return true
	}
	return false
}

func startFix(os engine.OS, name string) string {
	if os == engine.Windows {
		return fmt.Sprintf("Start-Service %s; if it stops again, the Service Control Manager's events (Get-WinEvent) say why", name)
	}
	return fmt.Sprintf("systemctl start %s; if it stops again, journalctl -u %s says why", name, name)
}

func enableFix(os engine.OS, name string) string {
	if os == engine.Windows {
		return fmt.Sprintf("Set-Service -Name %s -StartupType Automatic", name)
	}
	return "systemctl enable " + name
}

func checkCRI(c *Ctx) {
	f := c.Facts
	if !f.CRI.Ran {
		c.Skip("crictl could not run on the node: "+oneLine(f.CRI.Detail, 200), false)
		return
	}
	if !f.CRI.OK {
		msg := fmt.Sprintf("containerd does not answer crictl info on %s", f.Node)
		if s, ok := f.Services["containerd"]; ok && s.Found && !s.Running {
			msg += " (the containerd service is " + s.State + ")"
		}
		c.Report(finding.Error, msg, "", lines(f.CRI.Detail)...)
		return
	}
	for _, cond := range f.CRIConditions {
		if cond.Type == "RuntimeReady" && !cond.Status {
			c.Report(finding.Error, fmt.Sprintf("containerd answers on %s but reports RuntimeReady=false: %s %s", f.Node, cond.Reason, cond.Message), "")
		}
	}
}

// logCause is one of the guide's known causes in the kubelet's log.
type logCause struct {
	name string
	// match reports whether a lower-cased line shows the cause.
	match func(l string) bool
	fix   string
}

var logCauses = []logCause{
	{name: "the clock (x509: certificate has expired or is not yet valid)",
		match: func(l string) bool { return strings.Contains(l, "certificate has expired or is not yet valid") },
		fix:   "compare the node's clock with the control plane's (HC505); Windows: w32tm /query /status and w32tm /resync /force; Linux: timedatectl and chronyc sources"},
	{name: "containerd is not answering",
		match: func(l string) bool {
			return (strings.Contains(l, "containerd.sock") || strings.Contains(l, "containerd-containerd")) &&
				(strings.Contains(l, "connect:") || strings.Contains(l, "error while dialing") || strings.Contains(l, "unavailable") || strings.Contains(l, "no such file") || strings.Contains(l, "cannot find the file"))
		},
		fix: "start containerd (HC501, HC502); the kubelet depends on it"},
	{name: "the connection to the API was lost (on Windows, typically when HNS created the vSwitch and moved the address to vEthernet)",
		match: func(l string) bool {
			return strings.Contains(l, "http2: client connection lost") || strings.Contains(l, "use of closed network connection") ||
				strings.Contains(l, "error updating node status") || strings.Contains(l, "wsarecv") || strings.Contains(l, "connectex")
		},
		fix: "Restart-Service kubelet (Windows, as Calico's documentation recommends after installation) or systemctl restart kubelet; check HC504"},
	{name: "no CNI configuration (cni plugin not initialized)",
		match: func(l string) bool {
			return strings.Contains(l, "cni plugin not initialized") || strings.Contains(l, "networkpluginnotready") || strings.Contains(l, "no networks found in")
		},
		fix: "see HC506: the pod network's agent has not written its configuration"},
	{name: "no approved serving certificate (kubectl logs and exec fail with tls: internal error)",
		match: func(l string) bool { return strings.Contains(l, "no serving certificate available for the kubelet") },
		fix:   "approve the node's kubelet-serving CSR: hybridctl csr approve -f cluster.yaml"},
}

func checkKubeletLog(c *Ctx) {
	f := c.Facts
	if f.KubeletLogError != "" && len(f.KubeletLog) == 0 {
		c.Skip("the kubelet's log could not be read ("+f.KubeletLogSource+"): "+oneLine(f.KubeletLogError, 200), false)
		return
	}
	now := f.Clock.Node
	if now.IsZero() {
		for _, l := range f.KubeletLog {
			if l.Time.After(now) {
				now = l.Time
			}
		}
	}
	for _, cause := range logCauses {
		var hits []hostfacts.LogLine
		for _, l := range f.KubeletLog {
			if age := now.Sub(l.Time); l.Time.IsZero() || age > RecentLog || age < -time.Minute || !cause.match(strings.ToLower(l.Text)) {
				continue
			}
			hits = append(hits, l)
		}
		if len(hits) == 0 {
			continue
		}
		last := hits[len(hits)-1]
		c.Report(finding.Warning, fmt.Sprintf("the kubelet's log on %s shows %s: %d line(s) in the last %s", f.Node, cause.name, len(hits), RecentLog),
			cause.fix, fmt.Sprintf("%s (%s): %s", f.KubeletLogSource, last.Time.Format(time.RFC3339), oneLine(last.Text, 300)))
	}
}

func checkAPI(c *Ctx) {
	f := c.Facts
	target := net.JoinHostPort(c.Expect.API.Host, strconv.Itoa(c.Expect.API.Port))
	if !f.API.Ran {
		c.Skip("no tool on the node to open a TCP connection: "+oneLine(f.API.Detail, 200), false)
		return
	}
	if !f.API.OK {
		c.Report(finding.Error, fmt.Sprintf("%s cannot open a TCP connection to the API at %s: %s", f.Node, target, oneLine(f.API.Detail, 300)), "", lines(f.API.Detail)...)
	}
}

func checkClock(c *Ctx) {
	f := c.Facts
	if !f.Clock.Sampled {
		c.Skip("the node's clock could not be read: "+oneLine(f.Clock.Detail, 200), true)
		return
	}
	skew, unc := f.Clock.Skew()
	verdict, _ := f.Clock.Judge(hostfacts.MaxClockSkew)
	if verdict == hostfacts.ClockUnknown {
		c.Skip(fmt.Sprintf("the clock sample's round trip was %s: its uncertainty (±%s) is larger than the %s limit", f.Clock.After.Sub(f.Clock.Before).Round(time.Millisecond), unc.Round(time.Millisecond), hostfacts.MaxClockSkew), true)
		return
	}
	if verdict != hostfacts.ClockBeyond {
		return
	}
	dir := "ahead of"
	if skew < 0 {
		dir = "behind"
	}
	ev := []string{fmt.Sprintf("node clock %s, this machine %s (±%s)", f.Clock.Node.Format(time.RFC3339Nano), f.Clock.Before.Add(unc).UTC().Format(time.RFC3339Nano), unc.Round(time.Millisecond))}
	if f.Clock.Synced != "" {
		ev = append(ev, "timedatectl NTPSynchronized="+f.Clock.Synced)
	}
	msg := fmt.Sprintf("the clock of %s is %s %s this machine's, beyond the %s limit: time synchronisation is not working, and at 5 minutes certificates fail with x509 errors (if every node shows the same, this machine's clock is the one off)",
		f.Node, skew.Abs().Round(time.Second), dir, hostfacts.MaxClockSkew)
	c.Report(finding.Error, msg, timeFix(f.OS), ev...)
}

func timeFix(os engine.OS) string {
	if os == engine.Windows {
		return "w32tm /query /status, then w32tm /resync /force (w32time must run, with the spec's NTP servers)"
	}
	return "timedatectl set-ntp true, then chronyc sources (or timedatectl timesync-status)"
}

func checkCNI(c *Ctx) {
	f := c.Facts
	var ev []string
	for _, cond := range f.CRIConditions {
		if cond.Type == "NetworkReady" && !cond.Status {
			ev = append(ev, fmt.Sprintf("crictl info: NetworkReady=false %s %s", cond.Reason, oneLine(cond.Message, 200)))
		}
	}
	if f.CNIError != "" {
		c.Report(finding.Error, fmt.Sprintf("no CNI configuration on %s: %s", f.Node, oneLine(f.CNIError, 200)), "", ev...)
		return
	}
	var valid []hostfacts.CNIFile
	for _, cf := range f.CNIFiles {
		if !cf.Valid {
			c.Report(finding.Error, fmt.Sprintf("%s on %s is not a valid CNI configuration: %s", cf.Name, f.Node, cf.Problem), "fix or remove the file; the runtime may pick it")
			continue
		}
		valid = append(valid, cf)
	}
	if len(valid) == 0 {
		c.Report(finding.Error, fmt.Sprintf("no CNI configuration in %s on %s: the runtime reports NetworkPluginNotReady (cni plugin not initialized)", f.CNIDir, f.Node), "", ev...)
		return
	}
	sort.Slice(valid, func(i, j int) bool { return valid[i].Name < valid[j].Name })
	first := valid[0]
	want := ""
	if c.Cluster != nil {
		switch c.Cluster.Source {
		case SourceCalico:
			want = "calico"
		case SourceFlannel:
			want = "flannel"
		}
	}
	if want == "" {
		return
	}
	for _, t := range first.Types {
		if t == want {
			return
		}
	}
	c.Report(finding.Warning, fmt.Sprintf("the first CNI configuration on %s, %s (network %q, plugins %s), is not the cluster's %s network: the runtime uses the first one", f.Node, first.Name, first.NetworkName, strings.Join(first.Types, ", "), want),
		"remove the leftover configuration from "+f.CNIDir)
}

// oneLine flattens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// lines splits s into trimmed non-empty lines (at most 10).
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, oneLine(l, 300))
		}
	}
	if len(out) > 10 {
		out = out[len(out)-10:]
	}
	return out
}
