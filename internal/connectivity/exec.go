// Running a command in a probe pod (the API server's exec).

package connectivity

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// Execer runs a command in a pod's probe container.
type Execer interface {
	Exec(ctx context.Context, namespace, pod string, cmd []string) (stdout, stderr string, err error)
}

// APIExec runs commands through the API server's pods/exec, as kubectl
// exec does.
type APIExec struct {
	Config *rest.Config
	Client kubeclient.Interface
}

// Exec runs cmd in the pod's "probe" container; ctx bounds it.
func (e APIExec) Exec(ctx context.Context, namespace, pod string, cmd []string) (string, string, error) {
	req := e.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "probe", Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	// As kubectl exec: WebSocket first (GET, RFC 6455), SPDY when the
	// upgrade is refused (older API servers, proxies).
	spdy, err := remotecommand.NewSPDYExecutor(e.Config, "POST", req.URL())
	if err != nil {
		return "", "", fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	ws, err := remotecommand.NewWebSocketExecutor(e.Config, "GET", req.URL().String())
	if err != nil {
		return "", "", fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return "", "", fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	stdout, stderr := &capped{max: 4096}, &capped{max: 4096}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	return stdout.String(), stderr.String(), err
}

// capped keeps the first max bytes written to it.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
