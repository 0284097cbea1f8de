package render

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// The guide's check workloads, hello on Linux and aspnetapp on Windows, run
// spec.checkWorkloads.image (one multi-OS image) with agnhost's arguments:
// netexec serves HTTP on CheckWorkloadPort, /healthz and /readyz included.
const (
	demoNamespace     = "demo"
	winDemoNamespace  = "win-demo"
	psaEnforce        = "pod-security.kubernetes.io/enforce"
	psaEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	appNameLabel      = "app.kubernetes.io/name"
	// CheckWorkloadPort is the port the check workloads serve HTTP on.
	CheckWorkloadPort = 8080
)

// checkWorkloadArgs are the check workloads' arguments: agnhost's HTTP
// server on CheckWorkloadPort.
func checkWorkloadArgs() []string {
	return []string{"netexec", fmt.Sprintf("--http-port=%d", CheckWorkloadPort)}
}

// pullSecrets is the check workloads' imagePullSecrets: the spec's, or none.
func pullSecrets(p *plan.Plan) []corev1.LocalObjectReference {
	if p.CheckWorkloads.ImagePullSecret == "" {
		return nil
	}
	return []corev1.LocalObjectReference{{Name: p.CheckWorkloads.ImagePullSecret}}
}

func ptr[T any](v T) *T { return &v }

// demoNamespaceYAML renders workloads/demo-namespace.yaml: the guide creates
// and labels it with kubectl (guide: "hello for the checks").
func demoNamespaceYAML() ([]byte, error) {
	ns := corev1.Namespace{
		TypeMeta:   typeMeta("v1", "Namespace"),
		ObjectMeta: metav1.ObjectMeta{Name: demoNamespace, Labels: map[string]string{psaEnforce: "restricted"}},
	}
	return yamlDocs(comment("Namespace for the Linux check workload, Pod Security restricted. Guide: \"hello for the checks\"."), ns)
}

// helloYAML renders workloads/hello.yaml.
func helloYAML(p *plan.Plan) ([]byte, error) {
	labels := map[string]string{appNameLabel: "hello"}
	dep := appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: demoNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					OS:               &corev1.PodOS{Name: corev1.Linux},
					ImagePullSecrets: pullSecrets(p),
					SecurityContext: &corev1.PodSecurityContext{
						// agnhost's Linux image runs as root unless told.
						RunAsNonRoot:   ptr(true),
						RunAsUser:      ptr(int64(65532)),
						RunAsGroup:     ptr(int64(65532)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:           "hello",
						Image:          p.CheckWorkloads.Image,
						Args:           checkWorkloadArgs(),
						Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: CheckWorkloadPort}},
						ReadinessProbe: httpProbe("/readyz"),
						LivenessProbe:  httpProbe("/healthz"),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
	lines := []string{"hello: the Linux service for the cross-OS checks. Guide: \"hello for the checks\"."}
	if s := p.CheckWorkloads.ImagePullSecret; s != "" {
		lines = append(lines, "Pulls with the docker-registry Secret "+s+" in namespace demo (see runbook.md).")
	}
	header := comment(lines...)
	return yamlDocs(header, dep, service("hello", demoNamespace, labels))
}

// aspnetappYAML renders the Windows check workload for one RuntimeClass.
// The first (withNamespace) is the guide's aspnetapp.yaml with the
// win-demo Namespace; further builds get their own Deployment and Service
// named aspnetapp-<runtimeclass>.
func aspnetappYAML(p *plan.Plan, rc plan.RuntimeClass, name string, withNamespace bool) ([]byte, error) {
	labels := map[string]string{appNameLabel: name}
	dep := appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: winDemoNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					OS:               &corev1.PodOS{Name: corev1.Windows},
					RuntimeClassName: ptr(rc.Name),
					ImagePullSecrets: pullSecrets(p),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr("ContainerUser")},
					},
					Containers: []corev1.Container{{
						Name:           "aspnetapp",
						Image:          p.CheckWorkloads.Image,
						Args:           checkWorkloadArgs(),
						Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: CheckWorkloadPort}},
						ReadinessProbe: httpProbe("/readyz"),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
						},
					}},
				},
			},
		},
	}
	header := comment(
		fmt.Sprintf("%s: the Windows check workload on %s (RuntimeClass %s). Guide: \"Checking: a Windows pod\".", name, rc.Release, rc.Name),
	)
	objs := []any{}
	if withNamespace {
		objs = append(objs, corev1.Namespace{
			TypeMeta: typeMeta("v1", "Namespace"),
			ObjectMeta: metav1.ObjectMeta{Name: winDemoNamespace, Labels: map[string]string{
				psaEnforce: "restricted", psaEnforceVersion: p.KubernetesMinor,
			}},
		})
	}
	objs = append(objs, dep, service(name, winDemoNamespace, labels))
	return yamlDocs(header, objs...)
}

func httpProbe(path string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http")}}}
}

func service(name, namespace string, selector map[string]string) corev1.Service {
	return corev1.Service{
		TypeMeta:   typeMeta("v1", "Service"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
}
