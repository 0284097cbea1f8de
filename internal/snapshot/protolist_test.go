package snapshot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// encodePodList encodes pods as the API server answers a LIST in
// protobuf: apimachinery's own serializer (magic, runtime.Unknown, List).
func encodePodList(t testing.TB, cont string, pods ...corev1.Pod) []byte {
	t.Helper()
	l := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: cont}, Items: pods}
	var b bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(l, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testPod(name string, annotation int) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
		Annotations: map[string]string{"size": strings.Repeat("x", annotation)}}}
}

// readAll runs readProtoList over data and returns the items' names.
func readAll(data []byte) ([]string, error) {
	var names []string
	err := readProtoList(bufio.NewReaderSize(bytes.NewReader(data), 16), func(item []byte) error {
		var p corev1.Pod
		if err := p.Unmarshal(item); err != nil {
			return err
		}
		names = append(names, p.Name)
		return nil
	})
	return names, err
}

// TestReadProtoListRoundTrip: the items of a list encoded by
// apimachinery's serializer come back one by one, in order, whatever
// their size (an item larger than the reader's buffer, one of 0 bytes of
// annotation), with the list's metadata (continue token) skipped; an
// empty list yields none.
func TestReadProtoListRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		cont string
	}{
		{"three", []corev1.Pod{testPod("a", 0), testPod("b", 100_000), testPod("c", 3)}, ""},
		{"continue token", []corev1.Pod{testPod("only", 1)}, "next-page"},
		{"empty", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(encodePodList(t, tc.cont, tc.pods...))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, p := range tc.pods {
				want = append(want, p.Name)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("items %q, want %q", got, want)
			}
		})
	}
}

// TestReadProtoListHostile: what is not a protobuf list is errNotProtobuf
// (the caller then reads the JSON way); a damaged or hostile stream is an
// error that says where, never a panic, a hang or a success with items
// missing.
func TestReadProtoListHostile(t *testing.T) {
	valid := encodePodList(t, "", testPod("a", 10), testPod("b", 10))
	magic := string(protoMagic)
	for _, tc := range []struct {
		name, data string
		want       string // error text; "not protobuf" for errNotProtobuf
	}{
		{"empty", "", "not protobuf"},
		{"JSON", `{"kind":"PodList","items":[]}`, "not protobuf"},
		{"short magic", "k8s", "not protobuf"},
		{"magic only", magic, "without a list"},
		{"field number 0", magic + "\x00", "field number 0"},
		{"group wire type", magic + "\x0b", "wire type 3"},
		{"truncated varint", magic + "\x12\x80", "unexpected EOF"},
		{"raw longer than the stream", magic + "\x12\x10\x12\x01", "unexpected EOF"},
		{"item over the limit", magic + "\x12\x06\x12\x84\x80\x80\x20", "limit"},
		{"item past the list", magic + "\x12\x01\x12\x00", "past its length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll([]byte(tc.data))
			switch {
			case tc.want == "not protobuf":
				if !errors.Is(err, errNotProtobuf) {
					t.Fatalf("error %v, want errNotProtobuf", err)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Every cut of a valid list before its last item's end fails.
	whole, err := readAll(valid)
	if err != nil || len(whole) != 2 {
		t.Fatalf("valid list: %v, %v", whole, err)
	}
	for cut := 0; cut < len(valid); cut++ {
		got, err := readAll(valid[:cut])
		if err == nil && len(got) != 2 {
			t.Fatalf("cut at %d of %d: no error and %d items", cut, len(valid), len(got))
		}
	}
}

// FuzzReadProtoList: any stream gives an error or items, never a panic;
// items are never longer than the limit; a success has seen a list.
func FuzzReadProtoList(f *testing.F) {
	f.Add(encodePodList(f, "", testPod("a", 10), testPod("b", 300)))
	f.Add(encodePodList(f, "c", testPod("x", 0)))
	f.Add([]byte(string(protoMagic) + "\x12\x01\x12\x00"))
	f.Add([]byte(`{"items":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := readProtoList(bufio.NewReaderSize(bytes.NewReader(data), 16), func(item []byte) error {
			if len(item) > maxProtoItem {
				return fmt.Errorf("item of %d bytes", len(item))
			}
			return nil
		})
		if err != nil && strings.HasPrefix(err.Error(), "item of") {
			t.Fatal(err)
		}
		if err == nil && !bytes.HasPrefix(data, protoMagic) {
			t.Fatal("success on a stream without the magic")
		}
	})
}

// TestTypedPodSameAsJSON: a pod decoded from protobuf is stored exactly as
// the same pod read as JSON (decodePod), kept whole or slim: owned by the
// reference marked controller, by a lone reference without the mark, not
// owned with two unmarked references (a bare pod, kept as a Workload),
// waiting with and without a reason, the k8s-app label, no statuses.
func TestTypedPodSameAsJSON(t *testing.T) {
	yes, no := true, false
	ref := func(kind, name string, c *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID("u-" + name), Controller: c}
	}
	waiting := func(reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "controlled", Labels: map[string]string{"k8s-app": "calico-node"},
			Annotations:     map[string]string{"x": "y", IgnoreAnnotation: "HC101"},
			OwnerReferences: []metav1.OwnerReference{ref("Deployment", "other", &no), ref("DaemonSet", "ds", &yes)}},
			Spec: corev1.PodSpec{NodeName: "win-1"},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "c1", Image: "registry.k8s.io/e2e-test-images/agnhost:2.66.1", State: waiting("ErrImagePull", "no matching manifest for windows/amd64")},
				{Name: "c2", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "c3", State: waiting("", "")}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "lone-unmarked", OwnerReferences: []metav1.OwnerReference{ref("ReplicaSet", "rs", nil)}},
			Spec: corev1.PodSpec{NodeName: "linux-1", NodeSelector: map[string]string{"a": "b"}, Hostname: "h",
				Containers: []corev1.Container{{Name: "app", Image: "nginx", Args: []string{"-x"}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "owned-unscheduled", OwnerReferences: []metav1.OwnerReference{ref("ReplicaSet", "rs", &yes)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "two-unmarked",
			OwnerReferences: []metav1.OwnerReference{ref("ReplicaSet", "r1", nil), ref("ReplicaSet", "r2", &no)}},
			Spec: corev1.PodSpec{NodeName: "win-1", NodeSelector: map[string]string{"kubernetes.io/os": "windows"},
				SecurityContext: &corev1.PodSecurityContext{},
				Containers:      []corev1.Container{{Name: "app", Image: "mcr.microsoft.com/windows/nanoserver:ltsc2022"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}}}},
	}
	for _, slim := range []bool{false, true} {
		// fromProto reads the encoding as the list reader does (owned pods
		// without their spec but nodeName); fromTyped decodes each pod whole.
		fromJSON, fromProto, fromTyped := New(), New(), New()
		var scratch podScratch
		for _, s := range []*Snapshot{fromJSON, fromProto, fromTyped} {
			s.Nodes = []*Node{{Object: Object{Meta: Meta{Name: "win-1", Labels: map[string]string{"kubernetes.io/os": "windows"}}}}}
			if slim {
				s.SlimPods()
			}
		}
		for i := range pods {
			data, err := json.Marshal(&pods[i])
			if err != nil {
				t.Fatal(err)
			}
			if err := fromJSON.AddKind(KindPod, "v1", "Pod", data, Source{}); err != nil {
				t.Fatal(err)
			}
			// Through the protobuf encoding, as the server sends it.
			b, err := pods[i].Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if err := fromProto.addPodProto(b, &scratch); err != nil {
				t.Fatal(err)
			}
			var p corev1.Pod
			if err := p.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if err := fromTyped.addTypedPod(&p); err != nil {
				t.Fatal(err)
			}
		}
		if len(fromJSON.Pods) != 3 || len(fromJSON.Workloads) != 1 {
			t.Fatalf("slim %t: the JSON way kept %d pods and %d workloads, want 3 and 1", slim, len(fromJSON.Pods), len(fromJSON.Workloads))
		}
		for _, other := range []*Snapshot{fromProto, fromTyped} {
			for what, pair := range map[string][2]any{
				"pods":      {fromJSON.Pods, other.Pods},
				"workloads": {fromJSON.Workloads, other.Workloads},
				"dropped":   {fromJSON.PodsDropped, other.PodsDropped},
			} {
				if !reflect.DeepEqual(pair[0], pair[1]) {
					j, _ := json.MarshalIndent(pair[0], "", " ")
					p, _ := json.MarshalIndent(pair[1], "", " ")
					t.Errorf("slim %t: %s differ:\nJSON:     %s\nprotobuf: %s", slim, what, j, p)
				}
			}
		}
	}
}

// readJSONItems runs readJSONListItems over data and returns the items.
func readJSONItems(data string) ([]string, error) {
	var items []string
	err := readJSONListItems(jsontext.NewDecoder(strings.NewReader(data), jsonv1.DefaultOptionsV1()), func(item []byte) error {
		items = append(items, string(item))
		return nil
	})
	return items, err
}

// TestReadJSONListItems: the items of a JSON List come back one by one
// wherever "items" is among the fields, other fields (nested arrays and
// objects included) skipped; what is not a complete List object is an
// error, never a success with items missing.
func TestReadJSONListItems(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string
		err        string
	}{
		{"list", `{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[{"a":1},{"b":[2,{"c":3}]}]}`, []string{`{"a":1}`, `{"b":[2,{"c":3}]}`}, ""},
		{"items first", `{"items":[{"a":1}],"kind":"List","x":[[],{}]}`, []string{`{"a":1}`}, ""},
		{"empty items", `{"items":[]}`, nil, ""},
		{"items null", `{"items":null}`, nil, ""},
		{"no items", `{"kind":"PodList"}`, nil, ""},
		{"empty input", ``, nil, "unexpected EOF"},
		{"array", `[{"a":1}]`, nil, "not an object"},
		{"cut in an item", `{"items":[{"a":1},{"b":`, []string{`{"a":1}`}, "unexpected EOF"},
		{"cut after the items", `{"items":[{"a":1}]`, []string{`{"a":1}`}, "unexpected EOF"},
		{"garbage", `{"items":[{"a":1}} `, []string{`{"a":1}`}, "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readJSONItems(tc.data)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("items %q, want %q", got, tc.want)
			}
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}

// FuzzReadJSONListItems: any input gives items or an error, never a panic;
// each item is one complete JSON value; a success read a whole value (what
// follows it, the end of the response, is not read).
func FuzzReadJSONListItems(f *testing.F) {
	f.Add(`{"kind":"PodList","items":[{"a":1},{"b":[2]}]}`)
	f.Add(`{"items":[`)
	f.Add(`[1]`)
	f.Fuzz(func(t *testing.T, data string) {
		items, err := readJSONItems(data)
		for _, it := range items {
			if !json.Valid([]byte(it)) {
				t.Fatalf("item %q is not one JSON value", it)
			}
		}
		var v any
		if err == nil && json.NewDecoder(strings.NewReader(data)).Decode(&v) != nil {
			t.Fatalf("success on %q, which does not start with a JSON value", data)
		}
	})
}

// TestFieldsKeys: the keys set (null ones left out, a duplicate read as
// the last), known ones stored as the list's own strings, which must stay
// sorted for the binary search.
func TestFieldsKeys(t *testing.T) {
	if !slices.IsSorted(securityContextKeys) {
		t.Fatal("securityContextKeys is not sorted")
	}
	var f Fields
	if err := f.UnmarshalJSON([]byte(`{"runAsUser":1,"x-custom":{},"privileged":null,"windowsOptions":{"hostProcess":true},"capabilities":null,"capabilities":{"drop":["ALL"]}}`)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Keys(), ","); got != "capabilities,runAsUser,windowsOptions,x-custom" {
		t.Errorf("keys %s", got)
	}
	for key, want := range map[string]bool{"runAsUser": true, "x-custom": true, "privileged": false, "capabilities": true, "fsGroup": false, "": false} {
		if f.Has(key) != want {
			t.Errorf("Has(%q) = %t", key, !want)
		}
	}
	if !f.HostProcess() {
		t.Error("HostProcess false")
	}
	if (Fields{}).HostProcess() || (Fields{}).Has("runAsUser") {
		t.Error("the zero Fields has something")
	}
}

// TestNodeKeepsReadyOnly: of a node's conditions only Ready is kept, with
// its reason and message, wherever it is in the list; none without it.
func TestNodeKeepsReadyOnly(t *testing.T) {
	s := New()
	for _, n := range []string{
		`{"metadata":{"name":"a"},"status":{"conditions":[{"type":"MemoryPressure","status":"False","message":"ok"},{"type":"Ready","status":"False","reason":"KubeletNotReady","message":"NetworkPluginNotReady"},{"type":"PIDPressure","status":"False"}]}}`,
		`{"metadata":{"name":"b"},"status":{"conditions":[{"type":"DiskPressure","status":"False"}]}}`,
	} {
		if err := s.AddKind(KindNode, "v1", "Node", []byte(n), Source{}); err != nil {
			t.Fatal(err)
		}
	}
	want := []Condition{{Type: "Ready", Status: "False", Reason: "KubeletNotReady", Message: "NetworkPluginNotReady"}}
	if got := s.Nodes[0].Status.Conditions; !reflect.DeepEqual(got, want) {
		t.Errorf("node a: %+v, want %+v", got, want)
	}
	if got := s.Nodes[1].Status.Conditions; got != nil {
		t.Errorf("node b: %+v, want none", got)
	}
}

// FuzzAddPodProto: any bytes as a pod never panic, and whenever the
// generated decoder accepts them, the fast path (metadata, nodeName and
// status only) stores exactly what decoding the whole pod stores.
func FuzzAddPodProto(f *testing.F) {
	yes := true
	for _, p := range []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", Labels: map[string]string{"k8s-app": "x"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "d", Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "r", Message: "m"}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "bare"}, Spec: corev1.PodSpec{NodeName: "n"}},
		// What a real pod carries besides: annotations, managed fields,
		// several labels and owners, conditions, a running container.
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "q", UID: "u", ResourceVersion: "7", Labels: map[string]string{"app": "x", "k8s-app": "calico-node"},
			Annotations:     map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Node", Name: "n1"}, {APIVersion: "apps/v1", Kind: "DaemonSet", Name: "calico-node", Controller: &yes}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)}}},
			Spec: corev1.PodSpec{NodeName: "w1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, Image: "i", ImageID: "d", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
					{Name: "d", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "two-owners", OwnerReferences: []metav1.OwnerReference{{Kind: "A", Name: "a"}, {Kind: "B", Name: "b"}}}},
	} {
		b, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append(b, b...)) // every part twice: merged by the generated decoder
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, whole := New(), New()
		var scratch podScratch
		fastErr := fast.addPodProto(data, &scratch)
		var p corev1.Pod
		if p.Unmarshal(data) != nil {
			return
		}
		if err := whole.addTypedPod(&p); err != nil {
			return // not JSON-encodable: the whole path fails too
		}
		if fastErr != nil {
			t.Fatalf("the fast path failed (%v) where the whole pod decodes", fastErr)
		}
		if !reflect.DeepEqual(fast.Pods, whole.Pods) || !reflect.DeepEqual(fast.Workloads, whole.Workloads) {
			t.Fatalf("fast path %+v %+v, whole pod %+v %+v", fast.Pods, fast.Workloads, whole.Pods, whole.Workloads)
		}
	})
}
