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

// The guide's check workloads. Their images are the guide's: hello from a
// private ghcr.io package (a pull secret the runbook creates), and
// Microsoft's sample .NET application on Nano Server.
const (
	HelloImage        = plan.HelloImage
	AspnetappImageFmt = plan.AspnetappImageFmt
	demoNamespace     = "demo"
	winDemoNamespace  = "win-demo"
	psaEnforce        = "pod-security.kubernetes.io/enforce"
	psaEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	appNameLabel      = "app.kubernetes.io/name"
)

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
					OS: &corev1.PodOS{Name: corev1.Linux},
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:           "hello",
						Image:          p.Image(HelloImage),
						Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
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
	header := comment(
		"hello: the Linux service for the cross-OS checks. Guide: \"hello for the checks\".",
		"Needs the ghcr-pull secret on the demo default ServiceAccount (see runbook.md).",
	)
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
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr("ContainerUser")},
					},
					Containers: []corev1.Container{{
						Name:           "aspnetapp",
						Image:          p.Image(fmt.Sprintf(AspnetappImageFmt, rc.ImageTag)),
						Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						ReadinessProbe: httpProbe("/"),
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
