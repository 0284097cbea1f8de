// Package gen writes a synthetic hybrid cluster as manifest files, for the
// lint benchmark (and, loaded into the test API server, for doctor):
// nodes (10% Windows, half on build 20348, half on 26100) and pods
// pods owned by ReplicaSets of Deployments and by DaemonSets, plus the
// controllers, RuntimeClasses and the guide's Calico objects. The cluster
// is correct: lint on it reports nothing at warning or above.
package gen

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/manifest"
)

// ToJSON rewrites every YAML file in dir as a JSON List.
func ToJSON(dir string) error {
	return rewrite(dir, ".json", func(items [][]byte) ([]byte, error) {
		out := []byte(`{"apiVersion":"v1","kind":"List","items":[`)
		for i, it := range items {
			if i > 0 {
				out = append(out, ',', '\n')
			}
			out = append(out, it...)
		}
		return append(out, "]}\n"...), nil
	})
}

// ToBlock rewrites every YAML file in dir as one List in block style, the
// way kubectl get -A -o yaml prints it: through sigs.k8s.io/yaml, as
// kubectl does (keys sorted, "- " at the key's indentation, long strings
// folded over several lines, multi-line strings as literal blocks).
func ToBlock(dir string) error {
	return rewrite(dir, ".yaml", func(items [][]byte) ([]byte, error) {
		list := []byte(`{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[`)
		for i, it := range items {
			if i > 0 {
				list = append(list, ',')
			}
			list = append(list, it...)
		}
		list = append(list, "]}"...)
		return yaml.JSONToYAML(list)
	})
}

// rewrite replaces each YAML file in dir by a file with extension ext
// holding what write makes of its documents (as JSON).
func rewrite(dir, ext string, write func(items [][]byte) ([]byte, error)) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var items [][]byte
		for _, d := range manifest.Documents(b) {
			j, err := yaml.YAMLToJSON(d.Data)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			items = append(items, j)
		}
		out, err := write(items)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		name := strings.TrimSuffix(f, ".yaml") + ext
		if err := os.WriteFile(name, out, 0o644); err != nil {
			return err
		}
		if name != f {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	return nil
}

type file struct {
	f *os.File
	w *bufio.Writer
}

func create(dir, name string) (*file, error) {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	return &file{f, bufio.NewWriterSize(f, 1<<20)}, nil
}

func (f *file) close() error {
	if err := f.w.Flush(); err != nil {
		return err
	}
	return f.f.Close()
}

// Write writes the cluster into dir (created): nNodes nodes, nPods pods,
// at most perFile objects in each pods file.
func Write(dir string, nNodes, nPods, perFile int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	nWin := nNodes / 10
	nLinux := nNodes - nWin
	// Namespaces with their default ServiceAccount (the test API server
	// runs no controller that would create it).
	f, err := create(dir, "00-namespaces.yaml")
	if err != nil {
		return err
	}
	for _, ns := range []string{"tigera-operator", "calico-system"} {
		fmt.Fprintf(f.w, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {pod-security.kubernetes.io/enforce: privileged}}\n", ns)
		fmt.Fprintf(f.w, "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: %s}\n", ns)
	}
	for i := 0; i < 50; i++ {
		fmt.Fprintf(f.w, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team-%d}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: team-%d}\n", i, i)
	}
	if err := f.close(); err != nil {
		return err
	}
	f, err = create(dir, "cluster.yaml")
	if err != nil {
		return err
	}
	fmt.Fprint(f.w, clusterObjects)
	for i := 0; i < nLinux; i++ {
		fmt.Fprintf(f.w, linuxNode, i, i%250, i/250)
	}
	for i := 0; i < nWin; i++ {
		build, name := "10.0.26100", "Windows Server 2025 Datacenter"
		if i%2 == 1 {
			build, name = "10.0.20348", "Windows Server 2022 Datacenter"
		}
		fmt.Fprintf(f.w, windowsNode, i, build, name, build)
	}
	if err := f.close(); err != nil {
		return err
	}

	// Workloads: Linux Deployments of 10 replicas; Windows Deployments of
	// 10 replicas per build; DaemonSets on Linux nodes fill the rest.
	f, err = create(dir, "workloads.yaml")
	if err != nil {
		return err
	}
	nDeploy := nPods / 2 / 10
	for d := 0; d < nDeploy; d++ {
		ns := fmt.Sprintf("team-%d", d%50)
		if d%10 == 0 {
			rc, tag := "windows-2025", "ltsc2025"
			if d%20 == 0 {
				rc, tag = "windows-2022", "ltsc2022"
			}
			fmt.Fprintf(f.w, windowsDeployment, d, ns, rc, tag, d, ns, d)
		} else {
			fmt.Fprintf(f.w, linuxDeployment, d, ns, d, d, ns, d, d)
		}
	}
	if err := f.close(); err != nil {
		return err
	}

	written, part := 0, 0
	var pf *file
	next := func() error {
		if pf != nil {
			if err := pf.close(); err != nil {
				return err
			}
		}
		var err error
		pf, err = create(dir, fmt.Sprintf("pods-%03d.yaml", part))
		part++
		return err
	}
	if err := next(); err != nil {
		return err
	}
	emit := func(format string, a ...any) error {
		if written > 0 && written%perFile == 0 {
			if err := next(); err != nil {
				return err
			}
		}
		fmt.Fprintf(pf.w, format, a...)
		written++
		return nil
	}
	for d := 0; d < nDeploy && written < nPods; d++ {
		ns := fmt.Sprintf("team-%d", d%50)
		for r := 0; r < 10 && written < nPods; r++ {
			if d%10 == 0 {
				// Even Windows nodes run 2025, odd ones 2022, as the
				// Deployment's RuntimeClass asks.
				node := (2 * (d / 20)) % nWin
				if d%20 == 0 {
					node = (2*(d/20) + 1) % nWin
				}
				if err := emit(windowsPod, d, r, ns, d, d, node, d, r); err != nil {
					return err
				}
			} else {
				if err := emit(linuxPod, d, r, ns, d, d, (d*10+r)%nLinux, d, r); err != nil {
					return err
				}
			}
		}
	}
	for i := 0; written < nPods; i++ {
		if err := emit(daemonPod, i, i%nLinux, i); err != nil {
			return err
		}
	}
	return pf.close()
}

const clusterObjects = `---
apiVersion: v1
kind: ConfigMap
metadata: {name: kubeadm-config, namespace: kube-system}
data:
  ClusterConfiguration: |
    apiVersion: kubeadm.k8s.io/v1beta4
    kind: ClusterConfiguration
    kubernetesVersion: v1.37.2
    controlPlaneEndpoint: k8s-api.example.com:6443
    networking: {podSubnet: 172.16.0.0/12, serviceSubnet: 10.96.0.0/12, dnsDomain: cluster.local}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kubernetes-services-endpoint, namespace: tigera-operator}
data: {KUBERNETES_SERVICE_HOST: k8s-api.example.com, KUBERNETES_SERVICE_PORT: "6443"}
---
apiVersion: operator.tigera.io/v1
kind: Installation
metadata: {name: default}
spec:
  serviceCIDRs: [10.96.0.0/12]
  calicoNetwork:
    bgp: Disabled
    linuxDataplane: Nftables
    windowsDataplane: HNS
    ipPools: [{name: default-ipv4-ippool, cidr: 172.16.0.0/12, blockSize: 26, encapsulation: VXLAN, natOutgoing: Enabled, nodeSelector: all()}]
---
apiVersion: projectcalico.org/v3
kind: IPAMConfiguration
metadata: {name: default}
spec: {strictAffinity: true}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: windows-2025}
handler: runhcs-wcow-process
scheduling:
  nodeSelector: {kubernetes.io/os: windows, kubernetes.io/arch: amd64, node.kubernetes.io/windows-build: "10.0.26100"}
  tolerations: [{key: os, operator: Equal, value: windows, effect: NoSchedule}]
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: windows-2022}
handler: runhcs-wcow-process
scheduling:
  nodeSelector: {kubernetes.io/os: windows, kubernetes.io/arch: amd64, node.kubernetes.io/windows-build: "10.0.20348"}
  tolerations: [{key: os, operator: Equal, value: windows, effect: NoSchedule}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-proxy-windows, namespace: kube-system}
spec:
  selector: {matchLabels: {k8s-app: kube-proxy-windows}}
  template:
    metadata: {labels: {k8s-app: kube-proxy-windows}}
    spec:
      os: {name: windows}
      nodeSelector: {kubernetes.io/os: windows}
      hostNetwork: true
      securityContext: {windowsOptions: {hostProcess: true, runAsUserName: "NT AUTHORITY\\system"}}
      tolerations: [{operator: Exists}]
      containers: [{name: kube-proxy, image: "sigwindowstools/kube-proxy:v1.37.2-calico-hostprocess"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      tolerations: [{operator: Exists}]
      containers:
      - name: agent
        image: registry.example.com/node-agent:2.4.1
        resources: {requests: {cpu: 10m, memory: 32Mi}}
`

const linuxNode = `---
apiVersion: v1
kind: Node
metadata:
  name: node-%[1]d
  labels: {kubernetes.io/os: linux, kubernetes.io/arch: amd64, kubernetes.io/hostname: node-%[1]d, topology.kubernetes.io/zone: zone-%[2]d}
  annotations: {projectcalico.org/IPv4VXLANTunnelAddr: 172.16.%[3]d.%[2]d}
spec: {podCIDR: ""}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: 7800m, memory: 31Gi, pods: "110"}
  conditions:
  - {type: MemoryPressure, status: "False", reason: KubeletHasSufficientMemory, message: kubelet has sufficient memory available}
  - {type: DiskPressure, status: "False", reason: KubeletHasNoDiskPressure, message: kubelet has no disk pressure}
  - {type: PIDPressure, status: "False", reason: KubeletHasSufficientPID, message: kubelet has sufficient PID available}
  - {type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status}
  nodeInfo: {kubeletVersion: v1.37.2, osImage: Ubuntu 26.04.1 LTS, operatingSystem: linux, kernelVersion: 7.0.0-42-generic, containerRuntimeVersion: containerd://2.2.2}
`

const windowsNode = `---
apiVersion: v1
kind: Node
metadata:
  name: win-%[1]d
  labels: {kubernetes.io/os: windows, kubernetes.io/arch: amd64, node.kubernetes.io/windows-build: "%[2]s", kubernetes.io/hostname: win-%[1]d}
spec:
  taints: [{key: os, value: windows, effect: NoSchedule}]
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "60"}
  allocatable: {cpu: "4", memory: 7Gi, pods: "60"}
  conditions:
  - {type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status}
  nodeInfo: {kubeletVersion: v1.37.2, osImage: %[3]s, operatingSystem: windows, kernelVersion: %[4]s.1000, containerRuntimeVersion: containerd://2.2.2}
`

const linuxDeployment = `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%[1]d, namespace: %[2]s, labels: {app: app-%[3]d}}
spec:
  replicas: 10
  selector: {matchLabels: {app: app-%[1]d}}
  template:
    metadata: {labels: {app: app-%[1]d}}
    spec:
      os: {name: linux}
      nodeSelector: {kubernetes.io/os: linux}
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: registry.example.com/app-%[1]d:1.0.%[4]d
        env: [{name: BACKEND, value: "http://backend.%[5]s.svc.cluster.local"}]
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: app-%[6]d-5d8f7b
  namespace: %[2]s
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: app-%[7]d, controller: true, uid: "00000000-0000-0000-0000-000000000000"}]
spec:
  replicas: 10
  selector: {matchLabels: {app: app-%[1]d}}
  template:
    metadata: {labels: {app: app-%[1]d}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: app, image: "registry.example.com/app-%[1]d:1.0.%[4]d"}]
`

const windowsDeployment = `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%[1]d, namespace: %[2]s}
spec:
  replicas: 10
  selector: {matchLabels: {app: app-%[1]d}}
  template:
    metadata: {labels: {app: app-%[1]d}}
    spec:
      os: {name: windows}
      runtimeClassName: %[3]s
      securityContext: {runAsNonRoot: true, windowsOptions: {runAsUserName: ContainerUser}}
      containers:
      - name: app
        image: mcr.microsoft.com/dotnet/samples:aspnetapp-nanoserver-%[4]s
        resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: "1", memory: 512Mi}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: app-%[5]d-7c9d4f
  namespace: %[6]s
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: app-%[7]d, controller: true, uid: "00000000-0000-0000-0000-000000000000"}]
spec:
  replicas: 10
  selector: {matchLabels: {app: app-%[1]d}}
  template:
    metadata: {labels: {app: app-%[1]d}}
    spec:
      os: {name: windows}
      runtimeClassName: %[3]s
      containers: [{name: app, image: "mcr.microsoft.com/dotnet/samples:aspnetapp-nanoserver-%[4]s"}]
`

const linuxPod = `---
apiVersion: v1
kind: Pod
metadata:
  name: app-%[1]d-5d8f7b-%[2]d
  namespace: %[3]s
  labels: {app: app-%[4]d, pod-template-hash: 5d8f7b}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: app-%[5]d-5d8f7b, controller: true, blockOwnerDeletion: true, uid: "00000000-0000-0000-0000-000000000000"}]
spec:
  nodeName: node-%[6]d
  os: {name: linux}
  nodeSelector: {kubernetes.io/os: linux}
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  tolerations:
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  containers:
  - name: app
    image: registry.example.com/app-%[7]d:1.0.%[8]d
    env: [{name: BACKEND, value: "http://backend.svc.cluster.local"}]
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    volumeMounts: [{name: kube-api-access, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}]
  volumes:
  - name: kube-api-access
    projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 3607}}, {configMap: {name: kube-root-ca.crt}}]}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "True"}
  containerStatuses: [{name: app, ready: true, restartCount: 0, state: {running: {startedAt: "2026-11-06T20:00:00Z"}}}]
`

const windowsPod = `---
apiVersion: v1
kind: Pod
metadata:
  name: app-%[1]d-7c9d4f-%[2]d
  namespace: %[3]s
  labels: {app: app-%[4]d, pod-template-hash: 7c9d4f}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: app-%[5]d-7c9d4f, controller: true, blockOwnerDeletion: true, uid: "00000000-0000-0000-0000-000000000000"}]
spec:
  nodeName: win-%[6]d
  os: {name: windows}
  containers:
  - name: app
    image: mcr.microsoft.com/dotnet/samples:aspnetapp-nanoserver
    resources: {requests: {cpu: 100m, memory: 128Mi}}
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
  containerStatuses: [{name: app, ready: true, restartCount: 0, state: {running: {startedAt: "2026-11-06T20:00:00Z"}}}]
  # %[7]d %[8]d
`

const daemonPod = `---
apiVersion: v1
kind: Pod
metadata:
  name: node-agent-%[1]d
  namespace: kube-system
  labels: {app: node-agent}
  annotations: {node-agent.example.com/description: "collects the metrics and logs of node %[2]d for the fleet dashboard; owned by the platform team, paged through its on-call rotation"}
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: node-agent, controller: true, blockOwnerDeletion: true, uid: "00000000-0000-0000-0000-000000000000"}]
spec:
  nodeName: node-%[2]d
  nodeSelector: {kubernetes.io/os: linux}
  tolerations: [{operator: Exists}]
  containers:
  - name: agent
    image: registry.example.com/node-agent:2.4.1
    resources: {requests: {cpu: 10m, memory: 32Mi}}
status:
  phase: Running
  containerStatuses: [{name: agent, ready: true, restartCount: 0, state: {running: {startedAt: "2026-11-06T20:00:00Z"}}}]
  # %[3]d
`
