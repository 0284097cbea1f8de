package artifacts

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// PodNetworkManifest is the lab's pod network (docs/e2e.md): the podnet
// agent as a DaemonSet in kube-system, with the ServiceAccount and the
// read-only access to Nodes it needs. image is the podnet image reference;
// apiEndpoint, when set (host:port, for example the spec's
// controlPlaneEndpoint), is where the agent reaches the API server, so the
// network does not wait for kube-proxy's Service rules; mtu 0 leaves the
// bridge plugin's default.
func PodNetworkManifest(image, apiEndpoint string, mtu int) ([]byte, error) {
	if image == "" || strings.ContainsAny(image, " \n\"'") {
		return nil, fmt.Errorf("pod network: image %q is not a reference", image)
	}
	env := `        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
`
	dnsPolicy := "ClusterFirstWithHostNet"
	if apiEndpoint != "" {
		host, port, err := net.SplitHostPort(apiEndpoint)
		if err != nil || host == "" || strings.ContainsAny(host, " \n\"'") {
			return nil, fmt.Errorf("pod network: API endpoint %q is not host:port", apiEndpoint)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("pod network: API endpoint %q: port out of range", apiEndpoint)
		}
		env += fmt.Sprintf(`        - name: KUBERNETES_SERVICE_HOST
          value: %q
        - name: KUBERNETES_SERVICE_PORT
          value: %q
`, host, port)
		// The node's resolver knows the endpoint's name; cluster DNS may not
		// run yet (it needs this network).
		dnsPolicy = "Default"
	}
	if mtu != 0 {
		if mtu < 576 || mtu > 65535 {
			return nil, fmt.Errorf("pod network: MTU %d out of range 576-65535", mtu)
		}
		env += fmt.Sprintf("        - name: MTU\n          value: %q\n", strconv.Itoa(mtu))
	}
	return fmt.Appendf(nil, `# The hybridctl lab's pod network (hack/lab, docs/e2e.md): the CNI bridge and
# host-local plugins on each Node's spec.podCIDR, and the podnet agent, which
# watches the Nodes, writes that CNI configuration and routes every other
# node's podCIDR via its InternalIP. It stands where apply would install
# Calico (which cannot be built here).
apiVersion: v1
kind: ServiceAccount
metadata:
  name: hybridctl-lab-podnet
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: hybridctl-lab-podnet
rules:
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: hybridctl-lab-podnet
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: hybridctl-lab-podnet
subjects:
- kind: ServiceAccount
  name: hybridctl-lab-podnet
  namespace: kube-system
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: hybridctl-lab-podnet
  namespace: kube-system
  labels:
    app.kubernetes.io/name: hybridctl-lab-podnet
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: hybridctl-lab-podnet
  template:
    metadata:
      labels:
        app.kubernetes.io/name: hybridctl-lab-podnet
    spec:
      serviceAccountName: hybridctl-lab-podnet
      hostNetwork: true
      dnsPolicy: %s
      priorityClassName: system-node-critical
      nodeSelector:
        kubernetes.io/os: linux
      tolerations:
      - operator: Exists
      containers:
      - name: podnet
        image: %s
        env:
%s        securityContext:
          runAsUser: 0
          capabilities:
            drop: ["ALL"]
            add: ["NET_ADMIN"]
        resources:
          requests:
            cpu: 10m
            memory: 16Mi
          limits:
            memory: 128Mi
        volumeMounts:
        - name: cni-conf
          mountPath: /host/etc/cni/net.d
      volumes:
      - name: cni-conf
        hostPath:
          path: /etc/cni/net.d
          type: DirectoryOrCreate
`, dnsPolicy, image, env), nil
}
