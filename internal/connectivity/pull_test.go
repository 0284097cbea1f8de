package connectivity_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
