package csr

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

const (
	thiefNode  = "k8s-lab-thief-1"
	thiefIP    = "192.168.10.50"
	victimNode = "k8s-lab-victim-1"
	victimIP   = "192.168.10.60"
)

// registerThief sets up, on the real API server, a kubeadm cluster's
// kubeadm-config, a victim Node, and a node with stolen kubelet credentials
// that registers itself and then rewrites its own status to list the API
// server's names, the Service's name and ClusterIP, and the victim's name
// and address, as NodeRestriction lets a kubelet do. It returns the
// ClusterIP of Service default/kubernetes.
func registerThief(t *testing.T, env *testenv.Env, admin kubernetes.Interface) string {
	t.Helper()
	ctx := t.Context()
	_, err := admin.CoreV1().ConfigMaps(KubeadmConfigNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: KubeadmConfigName, Namespace: KubeadmConfigNamespace},
		Data: map[string]string{"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n" +
			"controlPlaneEndpoint: k8s-lab-api.example.com:6443\napiServer:\n  certSANs: [api.lab.example.com]\n"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	svc, err := admin.CoreV1().Services(APIServiceNamespace).Get(ctx, APIServiceName, metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP == "" {
		t.Fatalf("Service default/kubernetes: %v %v (the API server creates it)", svc, err)
	}
	registerNode(t, ctx, admin, victimNode, hostname(victimNode), internalIP(victimIP))

	thief := asNode(t, env, thiefNode)
	n, err := thief.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: thiefNode},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{hostname(thiefNode), internalIP(thiefIP)}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the node registering itself: %v", err)
	}
	t.Cleanup(func() {
		for _, name := range []string{thiefNode, victimNode} {
			_ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	n.Status.Addresses = append(n.Status.Addresses,
		internalDNS("k8s-lab-api.example.com"), internalDNS("api.lab.example.com"), internalDNS("kubernetes.default.svc"),
		hostname(victimNode), externalIP(victimIP), externalIP(svc.Spec.ClusterIP))
	if _, err := thief.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the node rewriting its own status (a kubelet may): %v", err)
	}
	// The anchor of the control-plane exception: a kubelet cannot label
	// its own Node as the control plane.
	patch := []byte(`{"metadata":{"labels":{"` + ControlPlaneLabel + `":""}}}`)
	if _, err := thief.CoreV1().Nodes().Patch(ctx, thiefNode, types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the node labelling itself %s: %v, want Forbidden (NodeRestriction)", ControlPlaneLabel, err)
	}
	return svc.Spec.ClusterIP
}

type claimCase struct {
	name       string
	dns, ips   []string
	want       Decision
	withoutFor string // reason without a spec
	withFor    string // reason with a spec
}

func claimCases(clusterIP string) []claimCase {
	own := []string{thiefNode}
	return []claimCase{
		{"own", own, []string{thiefIP}, Approve, "", ""},
		{"api-name", append(own, "k8s-lab-api.example.com"), []string{thiefIP}, Deny,
			`"k8s-lab-api.example.com", which Node k8s-lab-thief-1 reports about itself, collides with the API server's name "k8s-lab-api.example.com" (controlPlaneEndpoint "k8s-lab-api.example.com:6443" in ConfigMap kube-system/kubeadm-config)`,
			`DNS name "k8s-lab-api.example.com" does not belong to node k8s-lab-thief-1 (allowed by the cluster spec: k8s-lab-thief-1, k8s-lab-thief-1.example.com)`},
		{"cert-san", append(own, "api.lab.example.com"), []string{thiefIP}, Deny,
			`collides with the API server's name "api.lab.example.com" (apiServer.certSANs in ConfigMap kube-system/kubeadm-config)`,
			"allowed by the cluster spec"},
		{"service-name", append(own, "kubernetes.default.svc"), []string{thiefIP}, Deny,
			`"kubernetes.default.svc" is a name of the API server's Service default/kubernetes`,
			`"kubernetes.default.svc" is a name of the API server's Service default/kubernetes`},
		{"node-name", append(own, victimNode), []string{thiefIP}, Deny,
			`"k8s-lab-victim-1", which Node k8s-lab-thief-1 reports about itself, collides with Node "k8s-lab-victim-1"'s name`,
			"allowed by the cluster spec"},
		{"node-ip", own, []string{thiefIP, victimIP}, Deny,
			`192.168.10.60, which Node k8s-lab-thief-1 reports about itself, is the InternalIP that Node "k8s-lab-victim-1" reports too`,
			"IP address 192.168.10.60 is not node k8s-lab-thief-1's (allowed by the cluster spec: 192.168.10.50)"},
		{"cluster-ip", own, []string{thiefIP, clusterIP}, Deny,
			clusterIP + ", which Node k8s-lab-thief-1 reports about itself, is the API server's address (ClusterIP of Service default/kubernetes)",
			"is not node k8s-lab-thief-1's (allowed by the cluster spec: 192.168.10.50)"},
	}
}

var thiefSpec = StaticInventory{Suffix: "example.com", Addresses: map[string]netip.Addr{
	thiefNode:  netip.MustParseAddr(thiefIP),
	victimNode: netip.MustParseAddr(victimIP),
}}

// TestNodeClaimingAPIServerNames: the node of registerThief asks for each
// name and address it listed in its status. The one-shot approver (as
// `csr approve --yes` runs it, with and without -f) and the --watch
// controller (with and without a spec) deny every one, with a reason that
// says what it collides with, and approve its own; read back from the API.
func TestNodeClaimingAPIServerNames(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	clusterIP := registerThief(t, env, admin)
	server := env.AdminConfig().Host

	type mode struct {
		name      string
		spec      bool
		watch     bool
		inCluster bool // as the in-cluster approver's ServiceAccount, with its RBAC
	}
	for _, m := range []mode{{"one-shot", false, false, false}, {"one-shot-spec", true, false, false},
		{"watch", false, true, false}, {"watch-spec", true, true, false}, {"in-cluster", false, true, true}} {
		t.Run(m.name, func(t *testing.T) {
			cases := claimCases(clusterIP)
			opts := Options{}
			if m.spec {
				opts.Inventory = thiefSpec
			}
			var got *outcomes
			if m.watch {
				got = &outcomes{}
				approver := clientFor(t, env.AdminConfig())
				if m.inCluster {
					approver = inClusterIdentity(t, env, admin, DeployOptions{Namespace: "claims-approver", Image: "ghcr.io/hybridctl/hybridctl:test"})
				}
				log := &logBuffer{}
				c, err := NewController(approver, ControllerOptions{Options: opts, Server: server, Workers: 2, Logger: log.logger(), OnDecision: got.record})
				if err != nil {
					t.Fatal(err)
				}
				runController(t, c)
				log.waitLine(t, "starting kubelet-serving CSR approver")
				if w := log.lines("level=WARN"); len(w) > 0 {
					t.Fatalf("the controller could not read everything it compares with: %q", w)
				}
			}
			for _, tc := range cases {
				r := nodeReq(thiefNode, tc.ips...)
				r.dns = tc.dns
				createAsNode(t, env, thiefNode, "claim-"+m.name+"-"+tc.name, r)
			}
			if !m.watch {
				if !m.spec {
					opts.Cluster = APIClusterView(admin, server)
				}
				pending, err := ListPending(ctx, admin, nil)
				if err != nil {
					t.Fatal(err)
				}
				getNode := APINodeGetter(admin)
				for i := range pending {
					c := &pending[i]
					if !strings.HasPrefix(c.Name, "claim-"+m.name+"-") {
						continue
					}
					rv := ReviewCSR(ctx, c, getNode, opts)
					if _, err := ApplyWithRetry(ctx, admin, c, rv, opts); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, tc := range cases {
				name := "claim-" + m.name + "-" + tc.name
				if m.watch {
					got.waitFor(t, name, tc.want, "")
				}
				d, msg := decisionOf(t, ctx, admin, name)
				if d != tc.want {
					t.Errorf("%s: API shows %s (%s), want %s", tc.name, d, msg, tc.want)
					continue
				}
				want := tc.withoutFor
				if m.spec {
					want = tc.withFor
				}
				if !strings.Contains(msg, want) {
					t.Errorf("%s: condition %q does not say %q", tc.name, msg, want)
				}
			}
		})
	}
}

// inClusterIdentity creates the in-cluster approver's objects (without the
// Deployment: the test runs the controller itself) and returns a client
// that impersonates its ServiceAccount. It checks that the identity reads
// what DiscoverAPIServer needs and nothing beside it.
func inClusterIdentity(t *testing.T, env *testenv.Env, admin kubernetes.Interface, opts DeployOptions) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	o, err := InClusterApprover(opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Roles) != 2 {
		t.Fatalf("an approver without a spec has %d Roles, want 2 (kubeadm-config, Service kubernetes)", len(o.Roles))
	}
	for _, obj := range o.Objects() {
		switch v := obj.(type) {
		case *corev1.Namespace:
			_, err = admin.CoreV1().Namespaces().Create(ctx, v, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = admin.CoreV1().ServiceAccounts(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			v = v.DeepCopy()
			v.Name += "-" + opts.Namespace
			_, err = admin.RbacV1().ClusterRoles().Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			v = v.DeepCopy()
			v.Name += "-" + opts.Namespace
			v.RoleRef.Name += "-" + opts.Namespace
			_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = admin.RbacV1().Roles(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = admin.RbacV1().RoleBindings(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
		default:
			continue
		}
		if err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
	cfg := env.AdminConfig()
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + o.ServiceAccount.Namespace + ":" + o.ServiceAccount.Name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + o.ServiceAccount.Namespace, "system:authenticated"},
	}
	sa := clientFor(t, cfg)
	if _, err := sa.CoreV1().ConfigMaps(KubeadmConfigNamespace).Get(ctx, KubeadmConfigName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the approver reading ConfigMap kube-system/kubeadm-config: %v", err)
	}
	if _, err := sa.CoreV1().Services(APIServiceNamespace).Get(ctx, APIServiceName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the approver reading Service default/kubernetes: %v", err)
	}
	for what, err := range map[string]error{
		"list ConfigMaps in kube-system": func() error {
			_, err := sa.CoreV1().ConfigMaps(KubeadmConfigNamespace).List(ctx, metav1.ListOptions{})
			return err
		}(),
		"get ConfigMap kube-system/extension-apiserver-authentication": func() error {
			_, err := sa.CoreV1().ConfigMaps(KubeadmConfigNamespace).Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
			return err
		}(),
		"get a kubeadm-config ConfigMap elsewhere": func() error {
			_, err := sa.CoreV1().ConfigMaps(APIServiceNamespace).Get(ctx, KubeadmConfigName, metav1.GetOptions{})
			return err
		}(),
		"list Services": func() error {
			_, err := sa.CoreV1().Services(APIServiceNamespace).List(ctx, metav1.ListOptions{})
			return err
		}(),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the approver may %s: %v, want Forbidden", what, err)
		}
	}
	return sa
}
