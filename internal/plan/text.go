package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hybridctl/hybridctl/internal/termcolor"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

// WriteText writes the plan for people: nodes, networks, overlay, ports,
// DNS records, warnings and the topology diagram.
func (p *Plan) WriteText(w io.Writer) error {
	return p.WriteTextColor(w, termcolor.Palette{})
}

// WriteTextColor is WriteText with the warnings painted by pal.
func (p *Plan) WriteTextColor(w io.Writer, pal termcolor.Palette) error {
	ew := &errWriter{w: w}
	// Every value comes from the spec: escaped (termtext.Line), so that
	// nothing in it acts on the terminal or breaks a table's rows.
	e := termtext.Line
	ew.printf("Cluster %s: Kubernetes %s, API %s\n\n", e(p.Cluster), e(p.KubernetesVersion), e(p.ControlPlaneEndpoint))

	ew.printf("NODES\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tOS\tADDRESS\tMAX PODS\tRUNTIMECLASS\tTAINTS")
	for _, n := range p.Nodes {
		osName := n.OS
		if n.WindowsBuild != "" {
			osName += " " + n.WindowsBuild
		}
		taints := make([]string, 0, len(n.Taints))
		for _, t := range n.Taints {
			taints = append(taints, t.String())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e(n.Name), e(n.Role), e(osName), e(n.Address), n.MaxPods,
			e(dash(n.RuntimeClass)), e(dash(strings.Join(taints, ","))))
	}
	_ = tw.Flush()

	ew.printf("\nNETWORKS\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	nn := p.NodeNetwork
	fmt.Fprintf(tw, "nodes\t%s, gateway %s, DNS %s, NTP %s, MTU %d\n", e(nn.CIDR), e(dash(nn.Gateway)),
		e(dash(strings.Join(nn.DNSServers, " "))), e(dash(strings.Join(nn.NTPServers, " "))), nn.MTU)
	pn := p.PodNetwork
	nat := "NAT outgoing"
	if !pn.NATOutgoing {
		nat = "no NAT outgoing"
	}
	fmt.Fprintf(tw, "pods\t%s: %d blocks of /%d, %d addresses each (max %d pods on a Windows node); %s\n",
		e(pn.CIDR), pn.Blocks, pn.BlockSize, pn.AddressesPerBlock, pn.WindowsMaxPods, nat)
	fmt.Fprintf(tw, "services\t%s: API service IP %s, DNS service IP %s, domain %s\n",
		e(p.ServiceNetwork.CIDR), e(p.APIServer.ServiceIP), e(p.DNSServiceIP), e(p.DNSDomain))
	if p.VXLAN.Enabled {
		fmt.Fprintf(tw, "overlay\tVXLAN, VNI %d, UDP %d, pod MTU %d (node MTU %d - %d)\n", p.VXLAN.VNI, p.VXLAN.Port, p.VXLAN.PodMTU, p.VXLAN.NodeMTU, VXLANOverhead)
	} else {
		fmt.Fprintf(tw, "overlay\t%s, pod MTU %d\n", e(p.Calico.Encapsulation), p.VXLAN.PodMTU)
	}
	c := p.Calico
	win := ""
	if c.WindowsDataplane != "" {
		win = ", Windows dataplane " + c.WindowsDataplane
	}
	fmt.Fprintf(tw, "Calico\t%s (Tigera operator), Linux dataplane %s%s, BGP %s, IP pool %s\n", e(c.Version), e(c.LinuxDataplane), e(win), e(c.BGP), e(c.IPPoolName))
	fmt.Fprintf(tw, "\tCRDs: %s (%s)\n", e(c.CRDManifest), e(c.CRDMode))
	kp := fmt.Sprintf("%s on Linux", p.KubeProxy.LinuxMode)
	if p.KubeProxy.WindowsMode != "" {
		kp += fmt.Sprintf("; %s (winkernel) on Windows, image %s", p.KubeProxy.WindowsMode, p.KubeProxy.WindowsImage)
	}
	fmt.Fprintf(tw, "kube-proxy\t%s\n", e(kp))
	ctr := "containerd " + p.Versions.Containerd
	if p.PackagesSource != "bundle" {
		// The Linux nodes install the distribution's package: the spec's
		// version is what the Windows nodes run.
		ctr = "containerd: the distribution's package on Linux"
		for _, n := range p.Nodes {
			if n.IsWindows() {
				ctr = "containerd " + p.Versions.Containerd + " on Windows, the distribution's package on Linux"
				break
			}
		}
		if min := ContainerdRequired(p.KubernetesVersion); min != "" {
			ctr += " (" + min + " or later, checked by preflight)"
		}
	}
	fmt.Fprintf(tw, "versions\tKubernetes %s, %s, crictl %s\n", e(p.Versions.Kubernetes), e(ctr), e(p.Versions.Crictl))
	for _, a := range p.Addons {
		fmt.Fprintf(tw, "add-on\t%s %s\n", e(a.Name), e(a.Version))
	}
	_ = tw.Flush()

	if len(p.RuntimeClasses) > 0 {
		ew.printf("\nRUNTIMECLASSES\n")
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tHANDLER\tBUILD\tIMAGES\tNODES")
		for _, rc := range p.RuntimeClasses {
			fmt.Fprintf(tw, "%s\t%s\t%s (%s)\t%s\t%s\n", e(rc.Name), e(rc.Handler), e(rc.Build), e(rc.Release), e(rc.ImageTag), e(strings.Join(rc.Nodes, ",")))
		}
		_ = tw.Flush()
	}

	ew.printf("\nPORTS TO OPEN\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PORT\tON\tFROM\tPURPOSE")
	for _, pt := range p.Ports {
		purpose := pt.Purpose
		if pt.Optional {
			purpose += " (optional)"
		}
		fmt.Fprintf(tw, "%d/%s\t%s\t%s\t%s\n", pt.Port, e(pt.Protocol), e(pt.On), e(pt.From), e(purpose))
	}
	_ = tw.Flush()
	if p.Calico.BGP != "Enabled" {
		ew.printf("Not needed: 179/TCP (BGP is disabled).\n")
	}

	ew.printf("\nDNS RECORDS\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, r := range p.DNSRecords {
		fmt.Fprintf(tw, "%s.\t%s\t%s\t; %s\n", e(r.Name), e(r.Type), e(r.Address), e(r.Purpose))
	}
	_ = tw.Flush()

	ew.printf("\nIMAGES")
	if p.Registry != nil {
		ew.printf(" (all from %s)", e(p.Registry.Prefix))
	}
	ew.printf("\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, im := range p.Images {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e(im.Name), e(im.OS), e(im.Image))
	}
	_ = tw.Flush()

	if len(p.Warnings) == 0 {
		ew.printf("\nWARNINGS\nnone\n")
	} else {
		ew.printf("\n%s\n", pal.Severity("warning", "WARNINGS"))
	}
	for _, wn := range p.Warnings {
		ew.printf("- %s: %s [%s]\n", e(wn.Path), e(wn.Message), pal.Severity("warning", wn.Check+" "+wn.Name))
	}

	ew.printf("\nTOPOLOGY\n%s", termtext.Text(p.Diagram()))
	return ew.err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errWriter remembers the first write error so that text output can be
// written without checking every call.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }
