package render

import (
	"fmt"
	"testing"
)

// The kube-proxy DaemonSet is sig-windows-tools'
// hostprocess/calico/kube-proxy/kube-proxy.yml at SigWindowsToolsCommit with
// KUBE_PROXY_VERSION replaced (guide: "kube-proxy for Windows"). The
// upstream file is not kept here; these are its fields, transcribed.
func TestKubeProxyWindows(t *testing.T) {
	files := mustRender(t, labPlan(t), Options{})
	ds := docs(t, files["cluster/windows/kube-proxy-windows.yaml"])
	if len(ds) != 1 {
		t.Fatalf("%d documents, want the DaemonSet only (it borrows kubeadm's ServiceAccount and ConfigMap)", len(ds))
	}
	d := ds[0]
	for path, want := range map[string]any{
		"apiVersion":                            "apps/v1",
		"kind":                                  "DaemonSet",
		"metadata.name":                         "kube-proxy-windows",
		"metadata.namespace":                    "kube-system",
		"metadata.labels.k8s-app":               "kube-proxy",
		"spec.selector.matchLabels.k8s-app":     "kube-proxy-windows",
		"spec.template.metadata.labels.k8s-app": "kube-proxy-windows",
		"spec.template.spec.serviceAccountName": "kube-proxy",
		// Added to upstream's manifest (the guide: set os.name always).
		"spec.template.spec.os.name":                                      "windows",
		"spec.template.spec.securityContext.windowsOptions.hostProcess":   true,
		"spec.template.spec.securityContext.windowsOptions.runAsUserName": `NT AUTHORITY\system`,
		"spec.template.spec.hostNetwork":                                  true,
		"spec.template.spec.containers.0.name":                            "kube-proxy",
		"spec.template.spec.containers.0.image":                           "sigwindowstools/kube-proxy:v1.37.2-calico-hostprocess",
		"spec.template.spec.containers.0.args.0":                          "$env:CONTAINER_SANDBOX_MOUNT_POINT/kube-proxy/start.ps1",
		"spec.template.spec.containers.0.workingDir":                      "$env:CONTAINER_SANDBOX_MOUNT_POINT/kube-proxy/",
		// Upstream's Always pulls a mutable Docker Hub tag at every restart;
		// the tag names the cluster version, so a node pulls it once.
		"spec.template.spec.containers.0.imagePullPolicy":                     "IfNotPresent",
		"spec.template.spec.containers.0.env.0.name":                          "NODENAME",
		"spec.template.spec.containers.0.env.0.valueFrom.fieldRef.apiVersion": "v1",
		"spec.template.spec.containers.0.env.0.valueFrom.fieldRef.fieldPath":  "spec.nodeName",
		"spec.template.spec.containers.0.env.1.name":                          "POD_IP",
		"spec.template.spec.containers.0.env.1.valueFrom.fieldRef.fieldPath":  "status.podIP",
		"spec.template.spec.containers.0.volumeMounts.0.mountPath":            "/var/lib/kube-proxy",
		"spec.template.spec.containers.0.volumeMounts.0.name":                 "kube-proxy",
		"spec.template.spec.tolerations.0.key":                                "CriticalAddonsOnly",
		"spec.template.spec.tolerations.0.operator":                           "Exists",
		"spec.template.spec.tolerations.1.operator":                           "Exists",
		"spec.template.spec.volumes.0.name":                                   "kube-proxy",
		"spec.template.spec.volumes.0.configMap.name":                         "kube-proxy",
		// Upstream's RollingUpdate restarts every node's pod (and its
		// start.ps1 drops every HNS policy list) as soon as the template
		// changes; hybridctl restarts each node's pod in its own window.
		"spec.updateStrategy.type": "OnDelete",
	} {
		if got := get(d, path); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	// Label keys have dots: look them up directly.
	ns := get(d, "spec.template.spec.nodeSelector").(map[string]any)
	if len(ns) != 1 || ns["kubernetes.io/os"] != "windows" {
		t.Errorf("nodeSelector %v, want kubernetes.io/os: windows only", ns)
	}
	if tol := get(d, "spec.template.spec.tolerations").([]any); len(tol) != 2 {
		t.Errorf("%d tolerations, want 2", len(tol))
	}
}
