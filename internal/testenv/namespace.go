package testenv

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CreateNamespace creates a namespace with metadata.generateName prefix and
// the given labels, plus its "default" ServiceAccount, and returns the
// generated name.
func (e *Env) CreateNamespace(ctx context.Context, prefix string, labels map[string]string) (string, error) {
	if prefix == "" {
		return "", errors.New("CreateNamespace: empty prefix")
	}
	client, err := e.Client()
	if err != nil {
		return "", err
	}
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create namespace %s*: %w", prefix, err)
	}
	if err := e.ensureServiceAccounts(ctx, ns.Name); err != nil {
		return "", err
	}
	return ns.Name, nil
}
