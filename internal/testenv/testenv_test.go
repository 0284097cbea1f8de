package testenv_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Lab: true})
}

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// warnings collects the API server's admission warnings.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func TestServerIsKubernetes1372(t *testing.T) {
	env := testenv.Get(t)
	v, err := clientset(t, env.AdminConfig()).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != testenv.KubernetesVersion {
		t.Errorf("server gitVersion = %q, want %q (ldflags of hack/testenv)", v.GitVersion, testenv.KubernetesVersion)
	}
}

// guideBadPod is the pod from the guide's "Linux fields in a Windows pod".
func guideBadPod(ns string, withOS bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
		Spec: corev1.PodSpec{
			RuntimeClassName: ptr.To("windows-2025"),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      ptr.To[int64](10001),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{Name: "shell", Image: "mcr.microsoft.com/windows/nanoserver:ltsc2025"}},
		},
	}
	if withOS {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	}
	return p
}

func TestGuideBadWindowsPodIsRejected(t *testing.T) {
	env := testenv.Get(t)
	cs := clientset(t, env.AdminConfig())
	ctx := t.Context()

	_, err := cs.CoreV1().Pods("win-demo").Create(ctx, guideBadPod("win-demo", true), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create guide's bad pod in win-demo: got %v, want Invalid", err)
	}
	for _, want := range []string{
		`Pod "bad" is invalid`,
		"spec.securityContext.seccompProfile: Forbidden: cannot be set for a windows pod",
		"spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if _, err := cs.CoreV1().Pods("win-demo").Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod bad after the rejected create: got %v, want NotFound (nothing written)", err)
	}

	// Without os.name the same pod is accepted where Pod Security does not
	// enforce: the API server cannot know it is a Windows pod.
	ns := env.NewNamespace(t, "no-psa-", nil)
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, guideBadPod(ns, false), metav1.CreateOptions{}); err != nil {
		t.Errorf("same pod without spec.os in a namespace without Pod Security: %v, want accepted", err)
	}
}

func TestRuntimeClassInjectsSchedulingAndToleration(t *testing.T) {
	env := testenv.Get(t)
	var w warnings
	cfg := env.AdminConfig()
	cfg.WarningHandlerWithContext = &w
	cs := clientset(t, cfg)

	// A namespace like the guide's win-demo, so other tests see the lab's
	// win-demo unchanged.
	ns := env.NewNamespace(t, "win-demo-", map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "v1.37",
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "aspnetapp-", Namespace: ns},
		Spec: corev1.PodSpec{
			OS:               &corev1.PodOS{Name: corev1.Windows},
			RuntimeClassName: ptr.To("windows-2025"),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To("ContainerUser")},
			},
			Containers: []corev1.Container{{Name: "aspnetapp", Image: "mcr.microsoft.com/dotnet/samples:aspnetapp-nanoserver-ltsc2025"}},
		},
	}
	got, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Windows pod in restricted %s: %v", ns, err)
	}
	wantSelector := map[string]string{
		"kubernetes.io/os":                 "windows",
		"kubernetes.io/arch":               "amd64",
		"node.kubernetes.io/windows-build": "10.0.26100",
	}
	if !reflect.DeepEqual(got.Spec.NodeSelector, wantSelector) {
		t.Errorf("nodeSelector = %v, want %v (from RuntimeClass windows-2025)", got.Spec.NodeSelector, wantSelector)
	}
	wantTol := corev1.Toleration{Key: "os", Operator: corev1.TolerationOpEqual, Value: "windows", Effect: corev1.TaintEffectNoSchedule}
	if !slices.Contains(got.Spec.Tolerations, wantTol) {
		t.Errorf("tolerations = %v, want to contain %v", got.Spec.Tolerations, wantTol)
	}
	if got.Spec.Overhead != nil {
		t.Errorf("overhead = %v, want none (RuntimeClass has no overhead)", got.Spec.Overhead)
	}
	if len(w.msgs) != 0 {
		t.Errorf("admission warnings %q, want none (the guide: passed restricted without a single warning)", w.msgs)
	}
}

func TestHostProcessPodNeedsPrivilegedNamespace(t *testing.T) {
	env := testenv.Get(t)
	cs := clientset(t, env.AdminConfig())
	hostProcess := func(ns string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "kube-proxy-windows-", Namespace: ns},
			Spec: corev1.PodSpec{
				OS:          &corev1.PodOS{Name: corev1.Windows},
				HostNetwork: true,
				SecurityContext: &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
					HostProcess: ptr.To(true), RunAsUserName: ptr.To(`NT AUTHORITY\system`),
				}},
				Containers: []corev1.Container{{Name: "kube-proxy", Image: "sigwindowstools/kube-proxy:v1.37.2-calico-hostprocess"}},
			},
		}
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	// calico-system is labelled privileged by the operator; kube-system has
	// no Pod Security labels (privileged by default).
	for _, ns := range []string{"calico-system", "kube-system"} {
		if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), hostProcess(ns), dry); err != nil {
			t.Errorf("HostProcess pod in %s: %v, want accepted (kube-apiserver runs with --allow-privileged=true)", ns, err)
		}
	}
	_, err := cs.CoreV1().Pods("win-demo").Create(t.Context(), hostProcess("win-demo"), dry)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:v1.37"`) || !strings.Contains(err.Error(), "hostProcess") {
		t.Errorf("HostProcess pod in restricted win-demo: got %v, want Forbidden by Pod Security naming hostProcess", err)
	}
}

// servingCSR returns a PEM certificate request as a kubelet makes it for
// its serving certificate.
func servingCSR(t *testing.T, node string, ip string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		DNSNames:    []string{node},
		IPAddresses: []net.IP{net.ParseIP(ip)},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func csrObject(request []byte) *certv1.CertificateSigningRequest {
	return &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:    request,
			SignerName: certv1.KubeletServingSignerName,
			Usages:     []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth},
		},
	}
}

func TestNodeCreatesButCannotApproveItsServingCSR(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	nodeCfg, err := env.UserConfig("system:node:k8s-lab-node-1", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	asNode := clientset(t, nodeCfg).CertificatesV1().CertificateSigningRequests()

	csr, err := asNode.Create(ctx, csrObject(servingCSR(t, "k8s-lab-node-1", "192.168.10.24")), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node creates its own kubelet-serving CSR: %v", err)
	}
	if csr.Spec.Username != "system:node:k8s-lab-node-1" || !slices.Contains(csr.Spec.Groups, "system:nodes") {
		t.Errorf("CSR requester = %q %v, want system:node:k8s-lab-node-1 in system:nodes", csr.Spec.Username, csr.Spec.Groups)
	}

	csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type: certv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "SelfApproved", Message: "test",
	})
	if _, err := asNode.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node approves its own CSR: got %v, want Forbidden", err)
	}

	// NodeRestriction: a node cannot ask for another node's certificate.
	_, err = asNode.Create(ctx, csrObject(servingCSR(t, "k8s-lab-node-2", "192.168.10.26")), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "can only create a node CSR with CN=system:node:k8s-lab-node-1") {
		t.Errorf("node creates a CSR for another node: got %v, want Forbidden by NodeRestriction", err)
	}

	// The admin can approve it: the refusal above is about who asks.
	admin := clientset(t, env.AdminConfig()).CertificatesV1().CertificateSigningRequests()
	if _, err := admin.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Errorf("admin approves the CSR: %v", err)
	}
}

func TestNodeRestrictionLimitsANodeToItself(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	cfg, err := env.UserConfig("system:node:k8s-lab-node-1", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	nodes := clientset(t, cfg).CoreV1().Nodes()
	// Server-side dry runs: the lab's nodes stay as they are.
	dry := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	label := func(k, v string) []byte {
		return []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, k, v))
	}
	if _, err := nodes.Patch(ctx, "k8s-lab-node-1", types.MergePatchType, label("example.com/rack", "r1"), dry); err != nil {
		t.Errorf("node labels itself: %v", err)
	}
	if _, err := nodes.Patch(ctx, "k8s-lab-node-2", types.MergePatchType, label("example.com/rack", "r1"), dry); !apierrors.IsForbidden(err) {
		t.Errorf("node labels another node: got %v, want Forbidden", err)
	}
	_, err = nodes.Patch(ctx, "k8s-lab-node-1", types.MergePatchType, label("node-role.kubernetes.io/control-plane", ""), dry)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "node-role.kubernetes.io/control-plane") {
		t.Errorf("node gives itself the control-plane role label: got %v, want Forbidden by NodeRestriction", err)
	}
	// The Node authorizer: a node reads only what its pods need. A hello
	// pod on k8s-lab-node-1 pulls with demo/ghcr-pull (through the default
	// ServiceAccount's imagePullSecrets); k8s-lab-win-1 runs no demo pod.
	if _, err := clientset(t, cfg).CoreV1().Secrets("demo").Get(ctx, "ghcr-pull", metav1.GetOptions{}); err != nil {
		t.Errorf("k8s-lab-node-1 reads the pull secret of its hello pod: %v", err)
	}
	winCfg, err := env.UserConfig("system:node:k8s-lab-win-1", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clientset(t, winCfg).CoreV1().Secrets("demo").Get(ctx, "ghcr-pull", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("k8s-lab-win-1 reads a secret none of its pods uses: got %v, want Forbidden", err)
	}
}

var installationGVR = schema.GroupVersionResource{Group: "operator.tigera.io", Version: "v1", Resource: "installations"}

func TestInstallationSchemaRejectsUnknownBGP(t *testing.T) {
	env := testenv.Get(t)
	dyn, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bgp     string
		wantErr string // "" = accepted
	}{
		{"Disabled", ""},
		{"Enabled", ""},
		{"Maybe", `spec.calicoNetwork.bgp: Unsupported value: "Maybe": supported values: "Enabled", "Disabled"`},
	} {
		t.Run(tc.bgp, func(t *testing.T) {
			// The CRD allows only a few names; change the lab's
			// Installation, without persisting (dry run).
			obj, err := dyn.Resource(installationGVR).Get(t.Context(), "default", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(obj.Object, tc.bgp, "spec", "calicoNetwork", "bgp"); err != nil {
				t.Fatal(err)
			}
			_, err = dyn.Resource(installationGVR).Update(t.Context(), obj, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("bgp: %s rejected: %v", tc.bgp, err)
			case tc.wantErr != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("bgp: %s: got %v, want Invalid containing %q", tc.bgp, err, tc.wantErr)
			}
		})
	}
}

// Resources every authenticated user may create (system:basic-user and
// friends): reviews of one's own access and identity.
var selfReviews = map[string]bool{
	"authentication.k8s.io/selfsubjectreviews":      true,
	"authorization.k8s.io/selfsubjectaccessreviews": true,
	"authorization.k8s.io/selfsubjectrulesreviews":  true,
}

func TestReadOnlyUserCannotCreateAnything(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	user := "viewer-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	admin := clientset(t, env.AdminConfig())
	// Not the aggregated "view" role: without kube-controller-manager the
	// aggregation controller does not fill it, and it grants nothing.
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	viewer := clientset(t, cfg)

	// The identity works and can read: the refusals below are RBAC's. The
	// authorizer learns of the new binding from its informer, which can
	// lag the create by seconds on a loaded machine (a CI run once got
	// Forbidden here 20 ms after the create): wait for the grant, on
	// Forbidden only, and fail on any other error or after 30 s.
	var listErr error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, listErr = viewer.CoreV1().Pods("win-demo").List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(listErr) {
			return false, nil
		}
		return listErr == nil, listErr
	})
	if err != nil {
		t.Fatalf("viewer lists pods: %v (last answer: %v)", err, listErr)
	}

	// Ask the authorizer about every resource that has a create verb,
	// cluster-wide and in a namespace.
	lists, err := discovery.NewDiscoveryClient(viewer.RESTClient()).ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "create") || selfReviews[gv.Group+"/"+r.Name] {
				continue
			}
			ns := ""
			if r.Namespaced {
				ns = "win-demo"
			}
			review, err := viewer.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, selfAccessReview(gv.Group, r.Name, ns), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checked++
			if review.Status.Allowed {
				t.Errorf("read-only user may create %s.%s in %q", r.Name, gv.Group, ns)
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d resources; discovery returned too little", checked)
	}

	// And real creates are refused.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if _, err := viewer.CoreV1().ConfigMaps("win-demo").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("viewer creates a ConfigMap: got %v, want Forbidden", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: user}}
	if _, err := viewer.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("viewer creates a Namespace: got %v, want Forbidden", err)
	}
}

func selfAccessReview(group, resource, ns string) *authzv1.SelfSubjectAccessReview {
	return &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Group: group, Resource: resource, Namespace: ns, Verb: "create"},
	}}
}

func TestUserConfigAuthenticatesAsUserAndGroups(t *testing.T) {
	env := testenv.Get(t)
	cfg, err := env.UserConfig("alice", "team-a", "team-b")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "alice.conf")
	if err := env.WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	loaded, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load written kubeconfig: %v", err)
	}
	res, err := clientset(t, loaded).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ui := res.Status.UserInfo
	if ui.Username != "alice" || !slices.Contains(ui.Groups, "team-a") || !slices.Contains(ui.Groups, "team-b") || !slices.Contains(ui.Groups, "system:authenticated") {
		t.Errorf("whoami = %q %v, want alice in team-a, team-b, system:authenticated", ui.Username, ui.Groups)
	}

	// The admin kubeconfig is the same kind of file.
	adminLoaded, err := clientcmd.BuildConfigFromFlags("", env.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	res, err = clientset(t, adminLoaded).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.UserInfo.Username != testenv.AdminUser || !slices.Contains(res.Status.UserInfo.Groups, testenv.AdminGroup) {
		t.Errorf("admin whoami = %v", res.Status.UserInfo)
	}
}

func TestLabFixtureReadsBackAsWritten(t *testing.T) {
	env := testenv.Get(t)
	lab, err := testenv.LabDir()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testenv.ReadDir(lab)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := testenv.NewRESTMapper(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", o.Ref(), err)
			continue
		}
		live, err := dyn.Resource(m.Resource).Namespace(o.GetNamespace()).Get(t.Context(), o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", o.Ref(), err)
			continue
		}
		want := o.DeepCopy().Object
		// Secrets' stringData is write-only: it comes back in data.
		delete(want, "stringData")
		for _, d := range testenv.Subset(want, live.Object) {
			t.Errorf("%s: %s", o.Ref(), d)
		}
		if gvk.Kind == "Node" {
			wantTaints, _, _ := unstructured.NestedSlice(o.Object, "spec", "taints")
			gotTaints, _, _ := unstructured.NestedSlice(live.Object, "spec", "taints")
			if !reflect.DeepEqual(wantTaints, gotTaints) {
				t.Errorf("%s: taints = %v, want exactly %v", o.Ref(), gotTaints, wantTaints)
			}
		}
	}
	wantKinds := map[string]int{"Node": 4, "Namespace": 5, "RuntimeClass": 1, "Installation": 1, "IPPool": 1, "TigeraStatus": 5}
	for k, n := range wantKinds {
		if kinds[k] != n {
			t.Errorf("fixture has %d %s objects, want %d", kinds[k], k, n)
		}
	}

	// The nodes as kubectl get nodes shows them.
	nodes, err := clientset(t, env.AdminConfig()).CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}
		got = append(got, fmt.Sprintf("%s %s %s %s ready=%t", n.Name, n.Labels[corev1.LabelOSStable], n.Status.NodeInfo.KubeletVersion, n.Status.Addresses[0].Address, ready))
	}
	want := []string{
		"k8s-lab-master-1 linux v1.37.2 192.168.10.23 ready=true",
		"k8s-lab-node-1 linux v1.37.2 192.168.10.24 ready=true",
		"k8s-lab-node-2 linux v1.37.2 192.168.10.26 ready=true",
		"k8s-lab-win-1 windows v1.37.2 192.168.10.25 ready=true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("nodes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLabIsTheGuidesCluster checks the loaded lab against what the guide
// shows at its end, through the API as kubectl would see it.
func TestLabIsTheGuidesCluster(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	cs := clientset(t, env.AdminConfig())

	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	onWindows := map[string]bool{}
	dnsNodes := map[string]bool{}
	labNamespaces := map[string]bool{"kube-system": true, "calico-system": true, "tigera-operator": true, "cert-manager": true, "demo": true, "win-demo": true}
	for _, p := range pods.Items {
		if !labNamespaces[p.Namespace] {
			continue // other tests' pods
		}
		if p.Spec.NodeName == "k8s-lab-win-1" {
			onWindows[p.Namespace+"/"+p.Name] = true
		}
		if p.Labels["k8s-app"] == "kube-dns" && p.Namespace == "kube-system" {
			dnsNodes[p.Spec.NodeName] = true
		}
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s/%s is %s, want Running", p.Namespace, p.Name, p.Status.Phase)
		}
	}
	wantWindows := map[string]bool{
		"kube-system/kube-proxy-windows-z9qdq":    true,
		"calico-system/calico-node-windows-q54h2": true,
		"win-demo/aspnetapp-769559d8ff-dkp9z":     true,
		"win-demo/aspnetapp-769559d8ff-vk445":     true,
	}
	if !reflect.DeepEqual(onWindows, wantWindows) {
		t.Errorf("pods on k8s-lab-win-1 = %v, want %v", onWindows, wantWindows)
	}
	if len(dnsNodes) != 2 {
		t.Errorf("CoreDNS pods on nodes %v, want two different nodes", dnsNodes)
	}

	dss, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dss.Items) != 5 {
		t.Errorf("%d DaemonSets, want the guide's 5", len(dss.Items))
	}
	for _, ds := range dss.Items {
		osName := ds.Spec.Template.Spec.NodeSelector[corev1.LabelOSStable]
		if osName != "linux" && osName != "windows" {
			t.Errorf("DaemonSet %s/%s has no kubernetes.io/os selector", ds.Namespace, ds.Name)
		}
		if ds.Status.NumberReady != ds.Status.DesiredNumberScheduled || ds.Status.DesiredNumberScheduled == 0 {
			t.Errorf("DaemonSet %s/%s ready %d of %d", ds.Namespace, ds.Name, ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
		}
	}

	dyn, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	inst, err := dyn.Resource(installationGVR).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"spec.calicoNetwork.bgp":              "Disabled",
		"spec.calicoNetwork.windowsDataplane": "HNS",
		"spec.calicoNetwork.linuxDataplane":   "Nftables",
	} {
		got, _, _ := unstructured.NestedString(inst.Object, strings.Split(path, ".")...)
		if got != want {
			t.Errorf("Installation default %s = %q, want %q", path, got, want)
		}
	}
	pools, _, _ := unstructured.NestedSlice(inst.Object, "spec", "calicoNetwork", "ipPools")
	if len(pools) != 1 || pools[0].(map[string]any)["encapsulation"] != "VXLAN" {
		t.Errorf("Installation ipPools = %v, want one VXLAN pool", pools)
	}
	ipam, err := dyn.Resource(schema.GroupVersionResource{Group: "projectcalico.org", Version: "v3", Resource: "ipamconfigurations"}).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strict, _, _ := unstructured.NestedBool(ipam.Object, "spec", "strictAffinity"); !strict {
		t.Error("IPAMConfiguration default strictAffinity is not true")
	}
}
