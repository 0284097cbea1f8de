package csr

import (
	"bytes"
	"fmt"
	"github.com/distribution/reference"

	appsv1 "k8s.io/api/apps/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// DeployOptions configure the in-cluster approver.
type DeployOptions struct {
	// Namespace to run in (default "hybridctl-system"); the generator
	// creates it with Pod Security "restricted" enforced.
	Namespace string
	// Name of the ServiceAccount, ClusterRole, binding and Deployment
	// (default "hybridctl-csr-approver").
	Name string
	// Image is the hybridctl image (required).
	Image string
	// MaxExpiration, when non-zero, is passed as --max-expiration.
	MaxExpiration string
	// ClusterSpec, when set, is the cluster.yaml to check IP addresses
	// against (the inventory wins over what nodes report). It is shipped in
	// a ConfigMap and passed with -f.
	ClusterSpec []byte
}

// specMountDir is where the cluster spec ConfigMap is mounted.
const specMountDir = "/etc/hybridctl"

// InCluster is the set of objects that runs `hybridctl csr approve --watch`
// inside the cluster with least privilege.
type InCluster struct {
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	// ClusterSpec is nil unless DeployOptions.ClusterSpec was given.
	ClusterSpec        *corev1.ConfigMap
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// Roles and RoleBindings let an approver without a spec read the API
	// server's names (DiscoverAPIServer): get on ConfigMap
	// kube-system/kubeadm-config and on Service default/kubernetes, nothing
	// else. Empty when a spec is given: it alone names the nodes then.
	Roles        []*rbacv1.Role
	RoleBindings []*rbacv1.RoleBinding
	Deployment   *appsv1.Deployment
}

// Objects returns the objects in the order they must be created.
func (o *InCluster) Objects() []runtime.Object {
	objs := []runtime.Object{o.Namespace, o.ServiceAccount}
	if o.ClusterSpec != nil {
		objs = append(objs, o.ClusterSpec)
	}
	objs = append(objs, o.ClusterRole, o.ClusterRoleBinding)
	for i := range o.Roles {
		objs = append(objs, o.Roles[i], o.RoleBindings[i])
	}
	return append(objs, o.Deployment)
}

// YAML renders the objects as one multi-document YAML stream.
func (o *InCluster) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range o.Objects() {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("rendering %T: %w", obj, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// ApproverRules are the ClusterRole's rules: read kubelet-serving CSRs and
// Nodes, write the approval subresource, and approve for the
// kubelet-serving signer only. The API server's CertificateApproval admission
// checks the last rule for both Approved and Denied conditions.
func ApproverRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{certv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{certv1.GroupName}, Resources: []string{"certificatesigningrequests/approval"}, Verbs: []string{"update"}},
		{APIGroups: []string{certv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{SignerName}, Verbs: []string{"approve"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
	}
}

// APIServerNameRules are the rules, one namespace each, that let the
// approver read the API server's names without a spec: the kubeadm-config
// ConfigMap and the kubernetes Service, by name, get only.
func APIServerNameRules() map[string][]rbacv1.PolicyRule {
	return map[string][]rbacv1.PolicyRule{
		KubeadmConfigNamespace: {{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{KubeadmConfigName}, Verbs: []string{"get"}}},
		APIServiceNamespace:    {{APIGroups: []string{""}, Resources: []string{"services"}, ResourceNames: []string{APIServiceName}, Verbs: []string{"get"}}},
	}
}

// CheckImage checks that image is an image reference a kubelet can pull
// (registry/repository[:tag][@digest], as distribution parses it), so that
// a typo or a pasted JSON object fails here with the value quoted, not later
// as a pod stuck in InvalidImageName.
func CheckImage(image string) error {
	if image == "" {
		return fmt.Errorf("an image is required")
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return fmt.Errorf("%q is not an image reference (want registry/repository:tag or @sha256:digest): %w", image, err)
	}
	return nil
}

// InClusterApprover builds the objects for the in-cluster approver.
func InClusterApprover(opts DeployOptions) (*InCluster, error) {
	if err := CheckImage(opts.Image); err != nil {
		return nil, fmt.Errorf("in-cluster CSR approver: %w", err)
	}
	ns, name := opts.Namespace, opts.Name
	if ns == "" {
		ns = "hybridctl-system"
	}
	if name == "" {
		name = "hybridctl-csr-approver"
	}
	labels := map[string]string{
		"app.kubernetes.io/name":       name,
		"app.kubernetes.io/component":  "csr-approver",
		"app.kubernetes.io/managed-by": "hybridctl",
	}
	meta := func(namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
	}
	args := []string{"csr", "approve", "--watch"}
	if opts.MaxExpiration != "" {
		args = append(args, "--max-expiration="+opts.MaxExpiration)
	}
	yes, no := true, false
	uid := int64(65532)
	replicas := int32(1)
	o := &InCluster{
		Namespace: &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
				"pod-security.kubernetes.io/enforce": "restricted",
				"pod-security.kubernetes.io/audit":   "restricted",
				"pod-security.kubernetes.io/warn":    "restricted",
			}},
		},
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(ns),
		},
		ClusterRole: &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: meta(""),
			Rules:      ApproverRules(),
		},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		},
		Deployment: &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: meta(ns),
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
				// Two approvers at once are harmless (conflicts are retried)
				// but pointless; replace rather than overlap.
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: name,
						NodeSelector:       map[string]string{corev1.LabelOSStable: "linux"},
						// Serving certificates are needed from the first node
						// on: run on the control plane too.
						Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
						SecurityContext: &corev1.PodSecurityContext{
							RunAsNonRoot:   &yes,
							RunAsUser:      &uid,
							RunAsGroup:     &uid,
							SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
						Containers: []corev1.Container{{
							Name:  "approver",
							Image: opts.Image,
							Args:  args,
							SecurityContext: &corev1.SecurityContext{
								AllowPrivilegeEscalation: &no,
								ReadOnlyRootFilesystem:   &yes,
								RunAsNonRoot:             &yes,
								Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
								SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
							},
							Resources: corev1.ResourceRequirements{
								Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
								Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
							},
						}},
					},
				},
			},
		},
	}
	if len(opts.ClusterSpec) == 0 {
		rules := APIServerNameRules()
		for _, roleNS := range []string{KubeadmConfigNamespace, APIServiceNamespace} {
			o.Roles = append(o.Roles, &rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: meta(roleNS),
				Rules:      rules[roleNS],
			})
			o.RoleBindings = append(o.RoleBindings, &rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: meta(roleNS),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
			})
		}
	}
	if len(opts.ClusterSpec) > 0 {
		o.ClusterSpec = &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name + "-cluster-spec", Namespace: ns, Labels: labels},
			Data:       map[string]string{"cluster.yaml": string(opts.ClusterSpec)},
		}
		pod := &o.Deployment.Spec.Template.Spec
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "cluster-spec", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: o.ClusterSpec.Name}},
		}})
		ctr := &pod.Containers[0]
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "cluster-spec", MountPath: specMountDir, ReadOnly: true})
		ctr.Args = append(ctr.Args, "-f="+specMountDir+"/cluster.yaml")
	}
	return o, nil
}
