package snapshot

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/manifest/manifesttest"
)

// fullOwnedPod is how a pod a controller owns was read before
// decodeOwnedPod: the whole pod decoded, then the Pod taken out of it.
func fullOwnedPod(data []byte) (*Pod, bool) {
	var p rawPod
	if decodeJSON(data, &p) != nil {
		return nil, false
	}
	o := p.Meta.Controller()
	if o == nil {
		return nil, false
	}
	return &Pod{Namespace: p.Meta.Namespace, Name: p.Meta.Name, NodeName: p.Spec.NodeName, Owner: *o,
		App: p.Meta.Labels["k8s-app"], Status: p.Status}, true
}

// checkOwnedPod: wherever decoding the whole pod gives an owned Pod,
// decodeOwnedPod gives the same one. (It may read a pod the whole decode
// refuses: a field of the wrong type it does not read.)
func checkOwnedPod(t *testing.T, data []byte) {
	t.Helper()
	want, ok := fullOwnedPod(data)
	got, gotOK := decodeOwnedPod(data)
	if ok && (!gotOK || !reflect.DeepEqual(got, want)) {
		t.Fatalf("%s:\nthe whole decode %+v\ndecodeOwnedPod  %+v (%v)", data, want, got, gotOK)
	}
}

var ownedPodSeeds = []string{
	`{"metadata":{"name":"p","namespace":"n","labels":{"app":"a","k8s-app":"kube-dns"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","controller":true}]},"spec":{"nodeName":"w","containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running","containerStatuses":[{"name":"c","ready":false,"state":{"waiting":{"reason":"ErrImagePull","message":"m"}}}]}}`,
	`{"metadata":{"name":"p","labels":null,"ownerReferences":[{"kind":"DaemonSet","name":"d"}]},"spec":null,"status":null}`,
	`{"metadata":{"name":"p","labels":{"k8s-app":null,"k8s-app":"x","K8s-App":"y"},"ownerReferences":[{"kind":"A","name":"a"},{"kind":"B","name":"b","controller":true}]}}`,
	`{"metadata":{"name":"p","ownerReferences":[{"kind":"A","name":"a"},{"kind":"B","name":"b"}]}}`,
	`{"metadata":{"name":"p","labels":{"k8s-app":5},"ownerReferences":[{"kind":"A","name":"a"}]}}`,
	`{"metadata":{"name":"p","labels":[],"ownerReferences":[{"kind":"A","name":"a"}]}}`,
	`{"Metadata":{"Name":"p","OwnerReferences":[{"Kind":"A","Name":"a","Controller":true}]},"Spec":{"NodeName":"n"}}`,
	`{"metadata":{"name":"p","annotations":{"a":1},"ownerReferences":[{"kind":"A","name":"a"}]},"spec":{"containers":5,"nodeName":"n"}}`,
	`{"metadata":{"name":"\xff","ownerReferences":[{"kind":"A","name":"a"}]}}`,
	`{"metadata":{"name":"p","ownerReferences":[{"kind":"A","name":"a"}]},"spec":{"nodeName":[]}}`,
	`[]`, `null`, `{"metadata":5}`,
}

func TestDecodeOwnedPod(t *testing.T) {
	for _, s := range ownedPodSeeds {
		checkOwnedPod(t, []byte(s))
	}
	j, err := manifest.ToJSON([]byte(manifesttest.KubectlPod))
	if err != nil {
		t.Fatal(err)
	}
	checkOwnedPod(t, j)
	p, ok := decodeOwnedPod(j)
	if !ok || p.Name != "app-669-5d8f7b-0" || p.NodeName != "node-390" || p.Owner.Kind != "ReplicaSet" || p.Status.Phase != "Running" {
		t.Fatalf("the kubectl pod: %+v %v", p, ok)
	}
	// Every pod of the repository (fixtures, vendored renders).
	pods := 0
	for _, f := range manifesttest.YAMLFiles(t) {
		for _, d := range manifest.Documents(f.Data) {
			j, _, err := new(manifest.Converter).ToJSON(d.Data)
			if err == nil && bytes.Contains(j, []byte(`"kind":"Pod"`)) {
				pods++
				checkOwnedPod(t, j)
			}
		}
	}
	if pods < 20 {
		t.Errorf("only %d pods in the repository", pods)
	}
	// What it does not read may be of any type; what it reads may not.
	if _, ok := decodeOwnedPod([]byte(ownedPodSeeds[7])); !ok {
		t.Error("a wrong type in the spec's containers: not read")
	}
	for _, i := range []int{4, 5, 9} {
		if _, ok := decodeOwnedPod([]byte(ownedPodSeeds[i])); ok {
			t.Errorf("%s: read", ownedPodSeeds[i])
		}
	}
}

func FuzzDecodeOwnedPod(f *testing.F) {
	for _, s := range ownedPodSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkOwnedPod(t, data)
	})
}
