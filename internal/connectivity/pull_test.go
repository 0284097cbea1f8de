package connectivity_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/internal/connectivity"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// Probe pods whose image cannot be pulled end the wait at once, long
// before --ready-timeout, with each probe's node and image named; every
// test is not run and the command exits 3. The pods are bound to their
// nodes, given the kubelet's waiting state and removed when deleted here
// (there is no kubelet).
func TestImagePullFailure(t *testing.T) {
	env := testenv.Get(t)
	cs, _ := env.Client()
	ns := "conn-pull"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fake := make(chan error, 1)
	go func() {
		done := map[string]bool{}
		for ctx.Err() == nil {
			pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: connectivity.LabelManagedBy + "=" + connectivity.ManagedBy})
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				fake <- err
				return
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if !strings.HasPrefix(p.Namespace, ns) {
					continue
				}
				if p.DeletionTimestamp != nil {
					// The kubelet's part of a graceful delete.
					if err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
						fake <- err
						return
					}
					continue
				}
				if done[p.Name] {
					continue
				}
				node := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
				if err := cs.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{}); err != nil {
					fake <- err
					return
				}
				p, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					fake <- err
					return
				}
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", Image: p.Spec.Containers[0].Image,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
						Message: `Back-off pulling image "` + p.Spec.Containers[0].Image + `"`}}}}
				if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					fake <- err
					return
				}
				done[p.Name] = true
			}
			time.Sleep(200 * time.Millisecond)
		}
		fake <- nil
	}()
	began := time.Now()
	r := runCLI(t, append(adminKubeconfig(t, env), "-n", ns, "--ready-timeout", "2m", "-o", "json")...)
	took := time.Since(began)
	cancel()
	if err := <-fake; err != nil {
		t.Fatalf("the kubelet's part: %v", err)
	}
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if took > time.Minute {
		t.Errorf("took %s: the wait should end when every probe is known not to start, not at --ready-timeout", took)
	}
	rep := decode(t, r.stdout)
	if len(rep.Problems) == 0 || !strings.HasPrefix(rep.Problems[0], "6 of 6 probe pods cannot pull their image") {
		t.Fatalf("problems %q", rep.Problems)
	}
	for _, p := range rep.Probes {
		want := "probe pod " + p.Name + " on node " + p.Node + " cannot pull " + connectivity.DefaultImage + " (container probe): ImagePullBackOff"
		if !strings.Contains(rep.Problems[0], want) {
			t.Errorf("problem does not say %q:\n%s", want, rep.Problems[0])
		}
	}
	if rep.Summary.Pass != 0 || rep.Summary.Fail != 0 || rep.Summary.NotRun == 0 {
		t.Errorf("summary %+v", rep.Summary)
	}
	assertCleaned(t, cs, ns, ns+connectivity.HostNamespaceSuffix)
}

// A probe's first ErrImagePull is given the grace period: one that clears
// (the pod starts within it) lets the run go on; one seen again at its end
// ends the wait then, naming the image, long before --ready-timeout.
func TestImagePullGrace(t *testing.T) {
	env := testenv.Get(t)
	cs, _ := env.Client()
	const grace = 1500 * time.Millisecond
	for _, c := range []struct {
		name   string
		clears bool
	}{{"clears", true}, {"lasts", false}} {
		t.Run(c.name, func(t *testing.T) {
			ns := "conn-grace-" + c.name
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go pullingKubelet(ctx, cs, c.clears, ns, ns+connectivity.HostNamespaceSuffix)
			ex := &scripted{answer: func(string, []string) (string, error) { return "", nil }}
			r := runner(cs, ex, "agnhost")
			r.PullGrace = grace
			began := time.Now()
			rep, err := r.Run(t.Context(), labPlan(t, cs, ns, "dns-fqdn"))
			took := time.Since(began)
			cancel()
			if c.clears {
				if err != nil {
					t.Fatalf("a first ErrImagePull that clears ended the run: %v", err)
				}
				if rep.Summary.Pass == 0 {
					t.Errorf("no test ran: %+v", rep.Summary)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "cannot pull their image") || !strings.Contains(err.Error(), "(container probe): ErrImagePull: 403 Forbidden") {
				t.Fatalf("a lasting ErrImagePull: %v", err)
			}
			if took < grace || took > 30*time.Second {
				t.Errorf("the wait ended after %s: want the grace period (%s), then at once", took, grace)
			}
		})
	}
}

// pullingKubelet plays the kubelet for the probe pods of namespaces: each
// pod's first pull fails (ErrImagePull); with clears, the pod is running
// and ready half a second later.
func pullingKubelet(ctx context.Context, cs kubernetes.Interface, clears bool, namespaces ...string) {
	first := map[string]time.Time{}
	n := 0
	for ctx.Err() == nil {
		for _, ns := range namespaces {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					_ = cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
					continue
				}
				t0, seen := first[ns+"/"+p.Name]
				switch {
				case !seen:
					first[ns+"/"+p.Name] = time.Now()
					p.Status.Phase = corev1.PodPending
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", Image: p.Spec.Containers[0].Image,
						State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "403 Forbidden"}}}}
				case clears && p.Status.PodIP == "" && time.Since(t0) > 500*time.Millisecond:
					n++
					p.Status.Phase = corev1.PodRunning
					p.Status.PodIP = fmt.Sprintf("172.21.1.%d", n)
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", Image: p.Spec.Containers[0].Image, Ready: true,
						State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
				default:
					continue
				}
				_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
