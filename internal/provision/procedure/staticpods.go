package procedure

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// The annotations the kubelet sets on a static pod (its source, and its
// UID: a hash of the pod as the kubelet read and defaulted it) and on the
// mirror pod it creates for it in the API.
const (
	configSourceAnnotation = "kubernetes.io/config.source"
	configHashAnnotation   = "kubernetes.io/config.hash"
)

// awaitStaticPods waits until every static pod the node's kubelet runs
// has a Ready mirror pod in the API for the same version of its manifest
// (the mirror pod's kubernetes.io/config.mirror is the kubelet's UID of
// the static pod). A new kubelet defaults a pod's new fields, so the same
// manifest hashes differently and the kubelet restarts every static pod
// seconds after it starts: on a control plane, the API server, etcd, the
// controller manager and the scheduler. Until that is over, the node's
// step is not: the next step would meet an API server going away.
// staticPods reads the static pods the kubelet runs (kubeletStaticPods).
func awaitStaticPods(ctx context.Context, client kubeclient.Interface, node string, staticPods staticPodsFunc, timeout, poll time.Duration) error {
	start := time.Now()
	count := 0
	state, err := waitUntil(ctx, timeout, poll, func(ctx context.Context) (bool, string) {
		static, err := staticPods(ctx, client, node)
		if err != nil {
			return false, "the kubelet's pods: " + err.Error()
		}
		var pending []string
		for _, s := range static {
			hash := cmp.Or(s.Annotations[configHashAnnotation], string(s.UID))
			m, err := client.CoreV1().Pods(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
			switch {
			case err != nil:
				pending = append(pending, s.Namespace+"/"+s.Name+": "+err.Error())
			case m.Annotations[corev1.MirrorPodAnnotationKey] != hash:
				pending = append(pending, s.Namespace+"/"+s.Name+": its mirror pod is of another version of the manifest")
			case !podIsReady(m):
				pending = append(pending, s.Namespace+"/"+s.Name+": not Ready")
			}
		}
		sort.Strings(pending)
		count = len(static)
		return len(pending) == 0, strings.Join(pending, "; ")
	})
	if err != nil {
		return fmt.Errorf("the static pods of %s not running again under its new kubelet after %s: %s: %w", node, timeout, state, err)
	}
	engine.Progress(ctx, "the %d static pods of %s Ready under its new kubelet after %s", count, node, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// staticPodsFunc reads the static pods a node's kubelet runs.
type staticPodsFunc func(ctx context.Context, client kubeclient.Interface, node string) ([]corev1.Pod, error)

// maxKubeletPods bounds the kubelet's pod list upgrade reads: a node
// with a few hundred pods answers well under a MiB, and a node answering
// with more than this is not read further.
const maxKubeletPods = 16 << 20

// kubeletStaticPods are the static pods among the pods the node's kubelet
// runs (its /pods, through the API server's node proxy).
func kubeletStaticPods(ctx context.Context, client kubeclient.Interface, node string) ([]corev1.Pod, error) {
	body, err := client.CoreV1().RESTClient().Get().Resource("nodes").Name(node).SubResource("proxy").Suffix("pods").Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return staticPodsOf(body, node, maxKubeletPods)
}

// staticPodsOf decodes a kubelet's pod list of at most limit bytes and
// keeps the static pods (a config.source other than the API).
func staticPodsOf(r io.Reader, node string, limit int64) ([]corev1.Pod, error) {
	raw, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the pod list of %s's kubelet: %w", node, err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("the pod list of %s's kubelet is larger than %d bytes: not read", node, limit)
	}
	var list corev1.PodList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decoding the pod list of %s's kubelet: %w", node, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if src := p.Annotations[configSourceAnnotation]; src != "" && src != "api" {
			out = append(out, p)
		}
	}
	return out, nil
}
