package render

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestSparseYAML(t *testing.T) {
	f := false
	pod := corev1.Pod{
		TypeMeta:   typeMeta("v1", "Pod"),
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &f, // explicit false on a pointer: kept
			Containers:                   []corev1.Container{{Name: "c", Image: "i"}},
			Volumes:                      []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	b, err := yamlDocs("", pod)
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  volumes:
    - name: v
      emptyDir: {}
  containers:
    - name: c
      image: i
  automountServiceAccountToken: false
`
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
	kc, err := yamlDocs("", kubeletv1beta1.KubeletConfiguration{TypeMeta: typeMeta("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"), MaxPods: 28})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(kc)); got != "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 28" {
		t.Errorf("KubeletConfiguration with maxPods only:\n%s", got)
	}
}
