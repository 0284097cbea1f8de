package connectivity

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hybridctl/hybridctl/internal/spec"
)

// Kit is the command set of a probe image: how a pod serves, idles and
// connects.
type Kit struct {
	Name string
	// Serve are the container's arguments for a server on Port.
	Serve []string
	// Sleep are the arguments of the hostNetwork client: it must not listen
	// (it shares the node's ports).
	Sleep []string
	// Connect is the command run through pods/exec to connect to
	// host:port; exit 0 means connected.
	Connect func(hostport string) []string
}

// DefaultImage is Kubernetes' own e2e probe, the check workloads' default
// image: one manifest list for Linux and the Windows Server builds;
// `netexec` serves HTTP, `connect` tests TCP.
const DefaultImage = spec.DefaultCheckWorkloadImage

// Kits are the supported command sets, the default first.
func Kits() []Kit {
	return []Kit{
		{
			Name:  "agnhost",
			Serve: []string{"netexec", "--http-port=" + strconv.Itoa(Port)},
			Sleep: []string{"pause"},
			Connect: func(hp string) []string {
				return []string{"/agnhost", "connect", "--timeout=5s", "--protocol=tcp", hp}
			},
		},
		{
			// The lab's hello (hack/lab/artifacts/progs/hello): serves HTTP
			// on :8080 without arguments; `get URL` is an HTTP client with a
			// 10 s deadline.
			Name:  "hello",
			Serve: nil,
			Sleep: []string{"sleep"},
			Connect: func(hp string) []string {
				return []string{"/hello", "get", "http://" + hp + "/"}
			},
		},
	}
}

// KitNames lists the kits' names.
func KitNames() []string {
	var out []string
	for _, k := range Kits() {
		out = append(out, k.Name)
	}
	return out
}

// LookupKit finds a kit by name.
func LookupKit(name string) (Kit, error) {
	ks := Kits()
	i := slices.IndexFunc(ks, func(k Kit) bool { return k.Name == name })
	if i < 0 {
		return Kit{}, fmt.Errorf("--probe-kit %q: want one of %s", name, strings.Join(KitNames(), ", "))
	}
	return ks[i], nil
}

func labels(extra map[string]string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// Namespaces returns the namespaces to create: the probes' (Pod Security
// restricted) and, when node-to-pod runs, the host probe's (privileged).
func (p *Plan) Namespaces() []*corev1.Namespace {
	ns := func(name, level string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(map[string]string{
			"pod-security.kubernetes.io/enforce": level,
		})}}
	}
	out := []*corev1.Namespace{ns(p.Namespace, "restricted")}
	if p.HasHostProbe() {
		out = append(out, ns(p.HostNamespace, "privileged"))
	}
	return out
}

// ServiceAccounts returns the probes' ServiceAccount per namespace: without
// a token (the probes never talk to the API), and created by the command so
// that it does not wait for the controller that creates "default".
func (p *Plan) ServiceAccounts() []*corev1.ServiceAccount {
	var out []*corev1.ServiceAccount
	for _, ns := range p.Namespaces() {
		out = append(out, &corev1.ServiceAccount{
			ObjectMeta:                   metav1.ObjectMeta{Name: ServiceAccount, Namespace: ns.Name, Labels: labels(nil)},
			AutomountServiceAccountToken: new(false),
		})
	}
	return out
}

// ServiceObjects returns the ClusterIP Services, one per backend group.
func (p *Plan) ServiceObjects() []*corev1.Service {
	var out []*corev1.Service
	for _, g := range p.Services {
		out = append(out, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: g, Namespace: p.Namespace, Labels: labels(nil)},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{LabelManagedBy: ManagedBy, LabelGroup: g},
				Ports: []corev1.ServicePort{{Name: "http", Port: ServicePort, Protocol: corev1.ProtocolTCP,
					TargetPort: intstr.FromInt32(Port)}},
			},
		})
	}
	return out
}

// Pods returns the probe pods for kit.
func (p *Plan) Pods(kit Kit) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pr := range p.Probes {
		out = append(out, probePod(pr, kit))
	}
	return out
}

func probePod(pr Probe, kit Kit) *corev1.Pod {
	group := pr.Group
	if pr.Host {
		group = "" // not a backend of the group's Service
	}
	c := corev1.Container{
		Name:            "probe",
		Image:           pr.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": mustQuantity("10m"), "memory": mustQuantity("32Mi")},
			Limits:   corev1.ResourceList{"memory": mustQuantity("128Mi")},
		},
	}
	if pr.Host {
		c.Args = kit.Sleep
	} else {
		c.Args = kit.Serve
		c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: Port, Protocol: corev1.ProtocolTCP}}
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(Port)}},
			PeriodSeconds: 2,
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pr.Name, Namespace: pr.Namespace, Labels: labels(map[string]string{
			LabelGroup: group, LabelProbe: pr.Name,
		})},
		Spec: corev1.PodSpec{
			OS: &corev1.PodOS{Name: corev1.OSName(pr.OS)},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{pr.Node}}},
				}}},
			}},
			NodeSelector:                  map[string]string{corev1.LabelOSStable: pr.OS},
			Tolerations:                   pr.Tolerations,
			ServiceAccountName:            ServiceAccount,
			AutomountServiceAccountToken:  new(false),
			TerminationGracePeriodSeconds: new(int64(1)),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			HostNetwork:                   pr.Host,
			Containers:                    []corev1.Container{c},
		},
	}
	if pr.OS == OSWindows {
		if pr.Build != "" {
			pod.Spec.NodeSelector[windowsBuildLabel] = pr.Build
		}
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot:   new(true),
			WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: new("ContainerUser")},
		}
		return pod
	}
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   new(true),
		RunAsUser:      new(int64(65532)),
		RunAsGroup:     new(int64(65532)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	return pod
}

// hostPort joins a host and port for a URL or connect ("[::1]:80").
func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
