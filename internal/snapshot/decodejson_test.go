package snapshot

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/manifest/manifesttest"
)

// decodeTargets are the types decodeJSON decodes into (kindTable's
// decoders).
var decodeTargets = []func() any{
	func() any { return new(Node) },
	func() any { return new(Namespace) },
	func() any { return new(Service) },
	func() any { return new(ConfigMap) },
	func() any { return new(RuntimeClass) },
	func() any { return new(CSR) },
	func() any { return new(Installation) },
	func() any { return new(TigeraStatus) },
	func() any { return new(IPPool) },
	func() any { return new(IPAMConfiguration) },
	func() any { return new(FelixConfiguration) },
	func() any { return new(ClusterConfiguration) },
	func() any { return new(rawPod) },
	func() any { return new(rawWorkload) },
	func() any { return new(Fields) },
	func() any { return new(map[string]json.RawMessage) },
}

// checkDecodeJSON: decodeJSON gives what encoding/json gives, the value
// and the error, on data into every target. It reports how many targets
// the fast decoder accepted data into.
func checkDecodeJSON(t *testing.T, data []byte) (fast int) {
	t.Helper()
	for _, target := range decodeTargets {
		got, want := target(), target()
		err := decodeJSON(data, got)
		wantErr := json.Unmarshal(data, want)
		if wantErr != nil {
			wantErr = fieldError(data, wantErr)
		}
		switch {
		case (err == nil) != (wantErr == nil):
			t.Fatalf("%T: decodeJSON: %v, encoding/json: %v, on\n%s", got, err, wantErr, data)
		case err != nil && err.Error() != wantErr.Error():
			t.Fatalf("%T: decodeJSON: %v, encoding/json: %v, on\n%s", got, err, wantErr, data)
		case !reflect.DeepEqual(got, want):
			t.Fatalf("%T: decodeJSON and encoding/json differ on\n%s\ndecodeJSON:    %#v\nencoding/json: %#v", got, data, got, want)
		}
		if err == nil {
			fast++
		}
	}
	return fast
}

// decodeEdges are the places where a decoder can differ from encoding/json.
var decodeEdges = []string{
	`{"metadata":{"name":"a","namespace":"b","labels":{"x":"y"},"ownerReferences":[{"kind":"ReplicaSet","name":"r","controller":true}]}}`,
	`{"Metadata":{"NAME":"a"},"KIND":"Pod","apiversion":"v1","Spec":{"NodeName":"n"}}`,     // case-insensitive names
	`{"metadata":{"name":"a","name":"b","labels":{"x":"1"},"labels":{"y":"2"}}}`,           // duplicate names
	`{"spec":{"securityContext":null,"containers":[{"name":"c","securityContext":null}]}}`, // null into an Unmarshaler
	`{"spec":{"securityContext":{"runAsNonRoot":true,"windowsOptions":{"hostProcess":true},"x":null}}}`,
	`{"a": null ,"b" :{ "c" : [ 1 , null ] } ,"d":"\u0041", "a": 1}`, // raw values, as Fields keeps them
	`{"metadata":{"labels":null,"annotations":{}},"spec":{"containers":null,"tolerations":[]}}`,
	`{"status":{"numberReady":1e2,"replicas":1.0,"readyReplicas":-0}}`,                       // numbers into int
	`{"status":{"replicas":99999999999999999999}}`,                                           // overflow
	`{"spec":{"blockSize":26,"vxlanVNI":4096,"vxlanPort":"4789","cidr":5}}`,                  // number into string, string into *int
	`{"status":{"capacity":{"pods":"110"},"allocatable":{"pods":"1k"}}}`,                     // Count
	`{"status":{"capacity":{"pods":"1Mi"}}}`,                                                 // Count error
	`{"metadata":{"name":"\ud800x\udc00","namespace":"\u00e9\u212a"}}`,                       // lone surrogates, Kelvin sign
	"{\"metadata\":{\"name\":\"\xff\xfe\"}}",                                                 // invalid UTF-8
	`{"spec":{"node_name":"a","NODE-NAME":"b","host_pid":true},"status":{"number_ready":3}}`, // v2's own folding ignores - and _
	"{\"\u212aind\":\"Pod\",\"metadata\":{\"\u017fame\":\"a\"}}",                             // keys that fold to kind and name in Unicode
	`{"metadata":{"name":"a"}} `,
	`{"metadata":{"name":"a"}} x`, // trailing data
	`{"metadata":{"name":"a"}`,    // truncated
	`[1]`, `"x"`, `null`, `{}`, `{"metadata":[]}`, `{"metadata":{"name":null}}`,
	`{"spec":{"template":{"spec":{"hostPID":"true","os":{"name":"windows"}}}}}`,
	`{"spec":{"jobTemplate":{"spec":{"template":{"metadata":{"annotations":{"hybridctl.dev/ignore":"x","a":"b"}}}}}}}`,
	`{"data":{"a":"b","c":1}}`,
	`{"handler":"h","scheduling":{"nodeSelector":{"kubernetes.io/os":"windows"},"tolerations":[{"key":"os","operator":"Equal","value":"windows","effect":"NoSchedule","tolerationSeconds":5}]}}`,
	`{"spec":{"calicoNetwork":{"ipPools":[{"cidr":"10.0.0.0/16","blockSize":26}]}}}`,
	`{"status":{"containerStatuses":[{"name":"c","ready":true,"state":{"waiting":{"reason":"ErrImagePull"}}}]}}`,
	`{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"In","values":["a"]}]}]}}}}}`,
	`{"metadata":{"ownerReferences":[{"controller":"true"}]}}`,
	`{"metadata":{"creationTimestamp":"2026-01-01T00:00:00Z"},"networking":{"podSubnet":"10.244.0.0/16"},"kubernetesVersion":"v1.37.2"}`,
}

func TestDecodeJSONSame(t *testing.T) {
	fast := 0
	for _, d := range decodeEdges {
		fast += checkDecodeJSON(t, []byte(d))
	}
	j, err := manifest.ToJSON([]byte(manifesttest.KubectlPod))
	if err != nil {
		t.Fatal(err)
	}
	fast += checkDecodeJSON(t, j)
	// Most edges decode (the check is not vacuous).
	if fast < len(decodeEdges)*len(decodeTargets)/2 {
		t.Errorf("the fast decoder accepted %d of %d decodes", fast, len(decodeEdges)*len(decodeTargets))
	}
}

// TestDecodeJSONRepository decodes every YAML document in the repository
// into every target with both decoders.
func TestDecodeJSONRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the whole repository")
	}
	var docs, fast int
	for _, f := range manifesttest.YAMLFiles(t) {
		for _, doc := range manifest.Documents(f.Data) {
			j, err := manifest.ToJSON(doc.Data)
			if err != nil || len(j) == 0 || j[0] != '{' {
				continue
			}
			docs++
			fast += checkDecodeJSON(t, j)
		}
	}
	t.Logf("%d documents, %d of %d decodes by the fast decoder", docs, fast, docs*len(decodeTargets))
	if docs < 100 || fast < docs*len(decodeTargets)/2 {
		t.Errorf("%d documents, %d of %d decodes by the fast decoder", docs, fast, docs*len(decodeTargets))
	}
}

// FuzzDecodeJSON: on any input, decodeJSON gives encoding/json's value and
// error into every target.
func FuzzDecodeJSON(f *testing.F) {
	for _, d := range decodeEdges {
		f.Add([]byte(d))
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","env":[{"name":"A","valueFrom":{"configMapKeyRef":{"name":"m","key":"k"}}}],"envFrom":[{"configMapRef":{"name":"m"}}]}],"volumes":[{"name":"v","projected":{"sources":[{"configMap":{"name":"m"}}]}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeJSON(t, data)
	})
}
