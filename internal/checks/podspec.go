// The fields of a Windows pod template: spec.os (HC103), Service names
// with dots (HC109), Linux-only security context (HC110), HostProcess and
// Pod Security (HC111).

package checks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// HC103
func windowsPodOSField(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		if spec.OSName() != "" {
			return
		}
		msg := fmt.Sprintf("%s %s but its pod template does not set spec.os.name: windows", workloadLabel(w), c.windowsWhy(spec))
		if bad := linuxOnlyFields(spec); len(bad) > 0 {
			msg += fmt.Sprintf("; its Linux-only fields (%s) are ignored on the node, and with spec.os.name the API server would reject them", names(bad, 6))
		}
		c.Report(&w.Object, msg, "")
	})
}

// HC109
func windowsDottedServiceName(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		ns := w.Meta.Namespace
		var hits []string
		check := func(where, value string) {
			for _, h := range snapshot.DottedHosts(value) {
				if c.isServiceShortName(h) {
					hits = append(hits, fmt.Sprintf("%q in %s", h, where))
				}
			}
		}
		cms := map[string]bool{}
		for _, ctr := range spec.AllContainers() {
			for i, a := range ctr.Command {
				check(fmt.Sprintf("container %s command[%d]", ctr.Name, i), a)
			}
			for i, a := range ctr.Args {
				check(fmt.Sprintf("container %s args[%d]", ctr.Name, i), a)
			}
			for _, e := range ctr.Env {
				check(fmt.Sprintf("container %s env %s", ctr.Name, e.Name), e.Value)
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					cms[e.ValueFrom.ConfigMapKeyRef.Name] = true
				}
			}
			for _, ef := range ctr.EnvFrom {
				if ef.ConfigMapRef != nil {
					cms[ef.ConfigMapRef.Name] = true
				}
			}
		}
		for _, v := range spec.Volumes {
			if v.ConfigMap != nil {
				cms[v.ConfigMap.Name] = true
			}
			if v.Projected != nil {
				for _, s := range v.Projected.Sources {
					if s.ConfigMap != nil {
						cms[s.ConfigMap.Name] = true
					}
				}
			}
		}
		var cmNames []string
		for n := range cms {
			cmNames = append(cmNames, n)
		}
		sort.Strings(cmNames)
		for _, n := range cmNames {
			cm := c.ConfigMap(ns, n)
			if cm == nil {
				continue
			}
			for _, h := range cm.Hosts {
				if c.isServiceShortName(h.Value) {
					hits = append(hits, fmt.Sprintf("%q in ConfigMap %s key %s", h.Value, n, h.Key))
				}
			}
		}
		if len(hits) > 0 {
			c.Report(&w.Object, fmt.Sprintf("%s is a Windows pod template that uses dotted short service names, which the Windows DNS client does not complete: %s",
				workloadLabel(w), names(hits, 5)), "")
		}
	})
}

// isServiceShortName reports whether h ("name.namespace" or
// "name.namespace.svc") names a Service in the snapshot.
func (x *Index) isServiceShortName(h string) bool {
	p := strings.Split(h, ".")
	if len(p) < 2 {
		return false
	}
	return x.HasService(p[1], p[0])
}

// Linux-only security context fields (the API's validateWindows).
var (
	linuxPodSC = []string{"appArmorProfile", "seLinuxOptions", "seccompProfile", "fsGroup", "fsGroupChangePolicy",
		"sysctls", "runAsUser", "runAsGroup", "supplementalGroups", "supplementalGroupsPolicy", "seLinuxChangePolicy"}
	linuxContainerSC = []string{"appArmorProfile", "seLinuxOptions", "seccompProfile", "capabilities",
		"readOnlyRootFilesystem", "privileged", "allowPrivilegeEscalation", "procMount", "runAsUser", "runAsGroup"}
)

// linuxOnlyFields lists the Linux-only fields a pod template sets.
func linuxOnlyFields(spec *snapshot.PodSpec) []string {
	var bad []string
	for _, f := range linuxPodSC {
		if spec.SecurityContext.Has(f) {
			bad = append(bad, "spec.securityContext."+f)
		}
	}
	if spec.HostUsers != nil {
		bad = append(bad, "spec.hostUsers")
	}
	if spec.HostPID {
		bad = append(bad, "spec.hostPID")
	}
	if spec.HostIPC {
		bad = append(bad, "spec.hostIPC")
	}
	if spec.ShareProcessNamespace != nil {
		bad = append(bad, "spec.shareProcessNamespace")
	}
	for _, ctr := range spec.AllContainers() {
		for _, f := range linuxContainerSC {
			if ctr.SecurityContext.Has(f) {
				bad = append(bad, fmt.Sprintf("container %s securityContext.%s", ctr.Name, f))
			}
		}
	}
	return bad
}

// HC110: an error only with spec.os.name: windows, the one case in which
// the API server rejects the pod. Without it the fields are ignored on the
// node and HC103 (info) names them.
func windowsLinuxSecurityContext(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		if spec.OSName() != "windows" {
			return
		}
		bad := linuxOnlyFields(spec)
		if len(bad) == 0 {
			return
		}
		c.Report(&w.Object, fmt.Sprintf("%s sets spec.os.name: windows and Linux-only fields: %s; the API server rejects its pods (\"cannot be set for a windows pod\")",
			workloadLabel(w), names(bad, 6)), "")
	})
}

// HC111
func hostProcessPodSecurity(c *Ctx) {
	for _, w := range c.S.Workloads {
		spec := &w.Template.Spec
		if !spec.HostProcess() {
			continue
		}
		level, known := c.PodSecurityLevel(w.Meta.Namespace)
		if !known || level == "privileged" {
			continue
		}
		c.Report(&w.Object, fmt.Sprintf("%s runs HostProcess containers in namespace %s, which enforces Pod Security level %q: its pods are rejected",
			workloadLabel(w), w.Meta.Namespace, level), "")
	}
}
