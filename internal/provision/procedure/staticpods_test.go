package procedure

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// kubeletPods plays a kubelet's /pods: the static pods it runs, with the
// hash it computed for each manifest.
type kubeletPods struct {
	mu     sync.Mutex
	hashes map[string]string // pod name -> hash
	err    error
}

func (k *kubeletPods) set(name, hash string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hashes[name] = hash
}

func (k *kubeletPods) read(ns string) staticPodsFunc {
	return func(_ context.Context, _ kubeclient.Interface, _ string) ([]corev1.Pod, error) {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.err != nil {
			return nil, k.err
		}
		var out []corev1.Pod
		for name, hash := range k.hashes {
			out = append(out, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(hash),
				Annotations: map[string]string{configSourceAnnotation: "file", configHashAnnotation: hash}}})
		}
		return out, nil
	}
}

// mirror creates (or replaces) the mirror pod of a static pod, for hash.
func mirror(t *testing.T, admin kubernetes.Interface, ns, node, name, hash string, ready bool) {
	t.Helper()
	ctx := context.Background()
	zero := int64(0)
	if err := admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{corev1.MirrorPodAnnotationKey: hash, configSourceAnnotation: "file", configHashAnnotation: hash}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10.2"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if _, err := admin.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAwaitStaticPods, against the real API server: a control plane's
// step waits until each static pod its new kubelet runs has a Ready
// mirror pod for the same hash of its manifest; a mirror pod of the old
// hash (the kubelet has not restarted that pod yet), one not Ready, one
// missing, or a kubelet that cannot be read keeps it waiting, and the
// timeout names each; a cancelled context ends the wait.
func TestAwaitStaticPods(t *testing.T) {
	env := testenv.Get(t)
	admin := kubernetes.NewForConfigOrDie(env.AdminConfig())
	client, err := kubeclient.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := env.NewNamespace(t, "static", nil)
	node := "static-cp"
	registerNode(t, admin, node, "192.0.2.71")
	kubelet := &kubeletPods{hashes: map[string]string{"kube-apiserver-static-cp": "new-a", "etcd-static-cp": "new-e"}}
	mirror(t, admin, ns, node, "kube-apiserver-static-cp", "old-a", true)
	mirror(t, admin, ns, node, "etcd-static-cp", "new-e", false)
	ctx := context.Background()
	wait := func(timeout time.Duration) error {
		return awaitStaticPods(ctx, client, node, kubelet.read(ns), timeout, 20*time.Millisecond)
	}

	err = wait(300 * time.Millisecond)
	for _, want := range []string{"the static pods of static-cp not running again under its new kubelet after 300ms",
		ns + "/etcd-static-cp: not Ready", ns + "/kube-apiserver-static-cp: its mirror pod is of another version of the manifest"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("old and unready mirror pods: %v; want %q", err, want)
		}
	}
	mirror(t, admin, ns, node, "kube-apiserver-static-cp", "new-a", true)
	mirror(t, admin, ns, node, "etcd-static-cp", "new-e", true)
	if err := wait(5 * time.Second); err != nil {
		t.Errorf("every mirror pod Ready for the kubelet's hash: %v", err)
	}

	kubelet.set("kube-scheduler-static-cp", "new-s")
	if err := wait(200 * time.Millisecond); err == nil || !strings.Contains(err.Error(), ns+"/kube-scheduler-static-cp: ") || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a static pod without its mirror pod: %v", err)
	}
	// The mirror pod appears later, Ready: the wait ends then.
	go func() {
		time.Sleep(300 * time.Millisecond)
		mirror(t, admin, ns, node, "kube-scheduler-static-cp", "new-s", true)
	}()
	if err := wait(10 * time.Second); err != nil {
		t.Errorf("the mirror pod came: %v", err)
	}

	kubelet.mu.Lock()
	kubelet.err = errors.New("the kubelet is restarting")
	kubelet.mu.Unlock()
	if err := wait(200 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "the kubelet's pods: the kubelet is restarting") {
		t.Errorf("a kubelet that cannot be read: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := awaitStaticPods(cctx, client, node, kubelet.read(ns), time.Minute, 20*time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestStaticPodsOf: the kubelet's pod list keeps the pods of a file or
// URL source and drops the API's and those without a source; a list of
// exactly the limit is read, one byte more is refused, as is one that is
// not JSON.
func TestStaticPodsOf(t *testing.T) {
	list := `{"kind":"PodList","items":[` +
		`{"metadata":{"name":"kube-apiserver-cp","namespace":"kube-system","uid":"h1","annotations":{"kubernetes.io/config.source":"file","kubernetes.io/config.hash":"h1"}}},` +
		`{"metadata":{"name":"web-1","namespace":"default","annotations":{"kubernetes.io/config.source":"api"}}},` +
		`{"metadata":{"name":"bare","namespace":"default"}},` +
		`{"metadata":{"name":"from-url","namespace":"kube-system","annotations":{"kubernetes.io/config.source":"http"}}}]}`
	got, err := staticPodsOf(strings.NewReader(list), "cp", int64(len(list)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "kube-apiserver-cp,from-url" {
		t.Errorf("static pods %v, want kube-apiserver-cp and from-url", names)
	}
	if _, err := staticPodsOf(strings.NewReader(list), "cp", int64(len(list))-1); err == nil || !strings.Contains(err.Error(), "the pod list of cp's kubelet is larger than") {
		t.Errorf("one byte over the limit: %v", err)
	}
	if _, err := staticPodsOf(strings.NewReader("<html>"), "cp", 1<<10); err == nil || !strings.Contains(err.Error(), "decoding the pod list of cp's kubelet") {
		t.Errorf("not JSON: %v", err)
	}
}

// FuzzStaticPodsOf: whatever a kubelet answers, decoding it neither panics
// nor keeps a pod without a static source.
func FuzzStaticPodsOf(f *testing.F) {
	f.Add([]byte(`{"items":[{"metadata":{"name":"a","annotations":{"kubernetes.io/config.source":"file"}}}]}`))
	f.Add([]byte(`{"items":[{"metadata":{"annotations":{"kubernetes.io/config.source":"api"}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := staticPodsOf(bytes.NewReader(data), "n", 1<<16)
		if err != nil {
			return
		}
		for _, p := range pods {
			if src := p.Annotations[configSourceAnnotation]; src == "" || src == "api" {
				t.Fatalf("kept %q of source %q", p.Name, src)
			}
		}
	})
}
