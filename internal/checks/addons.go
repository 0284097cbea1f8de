package checks

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

var tagVersion = regexp.MustCompile(`^v?(\d+\.\d+(?:\.\d+)?)`)

// imageVersion returns the vX.Y.Z (or vX.Y, for a tag naming a minor version only) a tag starts with.
func imageVersion(image string) string {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}
	m := tagVersion.FindStringSubmatch(image[i+1:])
	if m == nil {
		return ""
	}
	return "v" + m[1]
}

// HC401
func kubeProxyWindows(c *Ctx) {
	win := c.WindowsNodes()
	if len(win) == 0 || !c.Known(snapshot.KindDaemonSet) {
		return
	}
	var found []*snapshot.Workload
	for _, w := range c.S.Workloads {
		if w.Kind != "DaemonSet" || !c.IsWindowsTemplate(&w.Template.Spec) {
			continue
		}
		for _, ctr := range w.Template.Spec.Containers {
			if strings.Contains(ctr.Image, "kube-proxy") {
				found = append(found, w)
				break
			}
		}
	}
	if len(found) == 0 {
		c.Report(&win[0].Object, fmt.Sprintf("there %s but no kube-proxy DaemonSet for Windows: Windows pods reach no Service", isAre(len(win), "Windows node")), "")
		return
	}
	sv := c.ServerVersion()
	sMaj, sMin, ok := minorOf(sv)
	if !ok {
		return
	}
	for _, w := range found {
		for _, ctr := range w.Template.Spec.Containers {
			if !strings.Contains(ctr.Image, "kube-proxy") {
				continue
			}
			v := imageVersion(ctr.Image)
			maj, mi, ok := minorOf(v)
			if !ok {
				continue
			}
			// The version skew policy: kube-proxy must not be newer than
			// kube-apiserver and may be up to three minor versions older
			// (two below 1.25). Patch releases do not count.
			var why string
			switch {
			case maj != sMaj:
				why = "another major version"
			case mi > sMin:
				why = "newer than the API server: kube-proxy must never be newer than the control plane"
			case sMin-mi > maxKubeProxySkew(mi):
				why = fmt.Sprintf("%d minor versions behind the API server (at most %d allowed)", sMin-mi, maxKubeProxySkew(mi))
			default:
				continue
			}
			c.Report(&w.Object, fmt.Sprintf("%s runs %s, version %s, but the cluster is %s: %s", workloadLabel(w), ctr.Image, v, sv, why),
				fmt.Sprintf("set the image tag to %s (e.g. sigwindowstools/kube-proxy:%s-calico-hostprocess)", sv, sv))
		}
	}
}

// maxKubeProxySkew is how many minor versions kube-proxy 1.minor may lag
// the API server (the version skew policy: three, two before 1.25).
func maxKubeProxySkew(minor int) int {
	if minor < 25 {
		return 2
	}
	return 3
}

// HC402
func calicoNodeWindowsReady(c *Ctx) {
	for _, w := range c.S.Workloads {
		if w.Kind != "DaemonSet" || w.Meta.Name != "calico-node-windows" {
			continue
		}
		st := w.Status
		if st.DesiredNumberScheduled == 0 || st.NumberReady >= st.DesiredNumberScheduled {
			continue
		}
		var bad []string
		for _, p := range c.PodsOf(w) {
			if !p.Status.Ready() {
				s := p.Name + " on " + p.NodeName
				if r := p.Status.WaitingReason(); r != "" {
					s += " (" + r + ")"
				}
				bad = append(bad, s)
			}
		}
		msg := fmt.Sprintf("DaemonSet %s/%s has %d of %d pods ready", w.Meta.Namespace, w.Meta.Name, st.NumberReady, st.DesiredNumberScheduled)
		if len(bad) > 0 {
			msg += ": not ready: " + names(bad, 5)
		}
		c.Report(&w.Object, msg, "")
	}
}
