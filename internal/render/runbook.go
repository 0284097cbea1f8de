package render

import (
	"bytes"
	"fmt"
	"net/netip"
	"path"
	"strings"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// BundleManifestsRef is how the runbook names the Calico manifests of a
// bundle: BUNDLE is the directory given to apply --bundle.
const BundleManifestsRef = "BUNDLE/manifests"

type runbookData struct {
	Plan              *plan.Plan
	ControlPlane      plan.Node
	Linux             []plan.Node
	LinuxWorkers      []plan.Node
	ControlPlanes     []plan.Node // the control-plane nodes after the first
	Windows           []plan.Node
	HasToken          bool
	HasCertificateKey bool
	Local             bool
	// Bundle: packages.source is bundle and the manifests come from the
	// bundle directory (BUNDLE/manifests/), not from the release site.
	Bundle           bool
	OperatorManifest string
	CRDRef           string
	OperatorRef      string
	Aspnetapp        []aspnetappRef
	// Addons are the add-on manifests step 9 applies: the release URL, or
	// the bundle's copy in bundle mode.
	Addons       []addonRef
	FirstWindows plan.Node
	CSRApprover  bool
	// OutputDir is where render wrote the files (Options.OutputDir).
	OutputDir string
}

type addonRef struct {
	Name, Manifest string
}

type aspnetappRef struct {
	Name, File, RuntimeClass, Image string
	Nodes                           []string
}

func (r *renderer) runbookData() runbookData {
	d := runbookData{Plan: r.plan, HasToken: r.opts.Token != "" && r.opts.CACertHash != "", Local: r.opts.Manifests != nil, OperatorManifest: OperatorManifest}
	d.HasCertificateKey = r.opts.CertificateKey != ""
	d.CSRApprover = r.opts.CSRApproverImage != ""
	d.OutputDir = r.opts.OutputDir
	if d.OutputDir == "" {
		d.OutputDir = "OUT"
	}
	d.ControlPlane, _ = firstControlPlane(r.plan)
	for _, n := range r.plan.Nodes {
		switch {
		case n.IsWindows():
			d.Windows = append(d.Windows, n)
		default:
			d.Linux = append(d.Linux, n)
			switch {
			case !n.IsControlPlane():
				d.LinuxWorkers = append(d.LinuxWorkers, n)
			case n.Name != d.ControlPlane.Name:
				d.ControlPlanes = append(d.ControlPlanes, n)
			}
		}
	}
	if len(d.Windows) > 0 {
		d.FirstWindows = d.Windows[0]
	}
	d.CRDRef, d.OperatorRef = r.plan.Calico.CRDManifestURL, r.plan.Calico.OperatorManifestURL
	switch {
	case d.Local:
		d.CRDRef = calicoManifestsDir + "/" + r.plan.Calico.CRDManifest
		d.OperatorRef = calicoManifestsDir + "/" + OperatorManifest
	case r.plan.PackagesSource == spec.SourceBundle:
		d.Bundle = true
		d.CRDRef = BundleManifestsRef + "/" + r.plan.Calico.CRDManifest
		d.OperatorRef = BundleManifestsRef + "/" + OperatorManifest
	}
	for _, a := range r.plan.Addons {
		ref := addonRef{Name: a.Name, Manifest: a.ManifestURL}
		if r.plan.PackagesSource == spec.SourceBundle {
			// Where bundle.Artifacts puts it and apply's addons phase reads
			// it (also with --manifests-dir, which is for Calico only).
			ref.Manifest = BundleManifestsRef + "/" + path.Base(a.ManifestURL)
		}
		d.Addons = append(d.Addons, ref)
	}
	for i, rc := range r.plan.RuntimeClasses {
		name, file := aspnetappNames(i, rc)
		d.Aspnetapp = append(d.Aspnetapp, aspnetappRef{Name: name, File: file, RuntimeClass: rc.Name,
			Image: r.plan.CheckWorkloads.Image, Nodes: rc.Nodes})
	}
	return d
}

// sshHost is the host the runbook's ssh and scp commands connect to: the
// node's SSH host (bastions, port forwards) or its address.
func sshHost(n plan.Node) string {
	if n.SSH.Host != "" {
		return n.SSH.Host
	}
	return n.Address
}

// scpHost is the host part of an scp operand (HOST:PATH): an IPv6 address
// in brackets.
func scpHost(n plan.Node) string {
	h := sshHost(n)
	if a, err := netip.ParseAddr(h); err == nil && a.Is6() {
		return shWord("[" + h + "]")
	}
	return shWord(h)
}

// sshCmd is the ssh command line up to the remote command; -t gives sudo a
// terminal to ask for its password. The user goes after -l and the host
// after --, so that neither can be read as an option whatever it holds
// (checkPlan refuses one that starts with '-' anyway).
func sshCmd(n plan.Node) string {
	var b strings.Builder
	b.WriteString("ssh -t")
	if n.SSH.Port != 0 && n.SSH.Port != 22 {
		fmt.Fprintf(&b, " -p %d", n.SSH.Port)
	}
	if n.SSH.User != "" {
		b.WriteString(" -l " + shWord(n.SSH.User))
	}
	b.WriteString(" -- " + shWord(sshHost(n)))
	return b.String()
}

// scpCmd is the scp command line up to its operands, which follow its
// "--": the user is an option's value (-o User=USER), so that the
// operands are HOST:PATH and a path, never an option.
func scpCmd(n plan.Node) string {
	var b strings.Builder
	b.WriteString("scp")
	if n.SSH.Port != 0 && n.SSH.Port != 22 {
		fmt.Fprintf(&b, " -P %d", n.SSH.Port)
	}
	if n.SSH.User != "" {
		b.WriteString(" -o " + shWord("User="+n.SSH.User))
	}
	b.WriteString(" --")
	return b.String()
}

func (r *renderer) calicoReadme() ([]byte, error) {
	var buf bytes.Buffer
	if err := r.tmpl.ExecuteTemplate(&buf, "calico-readme.md.tmpl", r.runbookData()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (r *renderer) runbook() error {
	return r.addGen("runbook.md", 0o644, func() ([]byte, error) {
		var buf bytes.Buffer
		if err := r.tmpl.ExecuteTemplate(&buf, "runbook.md.tmpl", r.runbookData()); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
}

// dnsRecords renders dns-records.txt: the plan's A records as zone-file
// lines (absolute names), for a zone file or to read into a DNS UI.
func (r *renderer) dnsRecords() error {
	var b strings.Builder
	b.WriteString(comment(
		"DNS records for cluster "+r.plan.Cluster+", rendered by hybridctl (zone-file lines).",
		"Guide: \"The lab\" - records for the nodes and the API name.",
		"Check: getent hosts NAME on every node; Resolve-DnsName NAME -Type A on Windows.",
	))
	width := 0
	for _, rec := range r.plan.DNSRecords {
		width = max(width, len(rec.Name)+1)
	}
	for _, rec := range r.plan.DNSRecords {
		fmt.Fprintf(&b, "%-*s IN %-4s %-15s ; %s\n", width, rec.Name+".", rec.Type, rec.Address, rec.Purpose)
	}
	return r.add("dns-records.txt", []byte(b.String()), 0o644)
}
