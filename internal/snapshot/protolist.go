package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Pods are read with one LIST from the API server's watch cache
// (resourceVersion=0) in Kubernetes' protobuf encoding, decoded one item
// at a time as the response arrives: the watch cache's speed without
// holding the list. Measured against kube-apiserver v1.37.2 with 150,000
// pods on two cores (bench/README.md): the watch-list stream costs the
// server ~8 s of CPU for the pods even in protobuf (each object goes
// through a watcher one event at a time) and ~9-15 s in JSON, the cached
// LIST ~1.5 s; the server encodes such a LIST as a stream
// (StreamingCollectionEncodingToProtobuf, on by default since 1.33).

// protoMagic opens every protobuf-encoded Kubernetes message.
var protoMagic = []byte{'k', '8', 's', 0}

// errNotProtobuf: the server answered the LIST in another encoding.
var errNotProtobuf = errors.New("the response is not in Kubernetes' protobuf encoding")

// maxProtoItem bounds one list item; the API server stores objects of at
// most ~1.5 MB (etcd's request limit), so anything near this is damage.
const maxProtoItem = 64 << 20

// listPodsProtobuf LISTs the pods under r from the watch cache in protobuf
// and adds each as it is decoded. It returns how many it added;
// errNotProtobuf (with none added) when the server answered otherwise.
func (s *Snapshot) listPodsProtobuf(ctx context.Context, rc rest.Interface, r resource, opts LiveOptions) (int, error) {
	body, err := get(ctx, rc, r, opts, "application/vnd.kubernetes.protobuf, application/json;q=0.9", "resourceVersion", "0")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	var scratch podScratch
	n := 0
	err = readProtoList(bufio.NewReaderSize(body, 64<<10), func(item []byte) error {
		if err := s.addPodProto(item, &scratch); err != nil {
			return fmt.Errorf("pod %d of the list: %w", n+1, err)
		}
		n++
		return nil
	})
	return n, err
}

// podScratch holds what addPodProto decodes into, reused from pod to pod.
type podScratch struct {
	owners []OwnerRef
	pod    corev1.Pod
}

// addPodProto stores one pod from its protobuf encoding. A pod a
// controller owns needs only its name, namespace, k8s-app label, owner
// references, spec.nodeName and part of its status: those are read from
// the wire (protoMeta, specNodeName, protoStatus) and the rest (most of a
// pod: containers, volumes, managed fields, annotations, conditions) is
// skipped; any other pod, or one whose encoding is unusual (a part
// repeated, a field of the wrong wire type), is decoded whole.
// TestTypedPodSameAsJSON checks both against the JSON path,
// FuzzAddPodProto the first against the second.
func (s *Snapshot) addPodProto(item []byte, scratch *podScratch) error {
	if meta, spec, status, ok := podParts(item); ok {
		var sp Pod
		if protoMeta(meta, &sp, &scratch.owners) {
			if node, ok := specNodeName(spec); ok && protoStatus(status, &sp.Status) {
				sp.NodeName = node
				s.addOwnedPod(&sp)
				return nil
			}
		}
	}
	p := &scratch.pod
	p.Reset()
	if err := p.Unmarshal(item); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if err := s.addTypedPod(p); err != nil {
		return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// podParts splits a Pod's protobuf encoding into its metadata (field 1),
// spec (2) and status (3); ok is false when it cannot be parsed or a part
// comes twice (the generated decoder would merge them).
func podParts(b []byte) (meta, spec, status []byte, ok bool) {
	var seen [4]bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, nil, false
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= 1 && num <= 3 {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 || seen[num] {
				return nil, nil, nil, false
			}
			seen[num] = true
			switch num {
			case 1:
				meta = v
			case 2:
				spec = v
			case 3:
				status = v
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, nil, nil, false
		}
		b = b[m:]
	}
	return meta, spec, status, true
}

// protoFields calls f with each field of a message's encoding; any
// field f does not take (false) is skipped. It reports false when the
// encoding is broken or f refused a field.
func protoFields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte) (taken, ok bool)) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var v []byte
		m := 0
		switch typ {
		case protowire.BytesType:
			v, m = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			m = protowire.ConsumeFieldValue(num, typ, b)
			v = b[:max(m, 0)]
		default:
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		if m < 0 {
			return false
		}
		b = b[m:]
		if taken, ok := f(num, typ, v); taken && !ok {
			return false
		}
	}
	return true
}

// protoString is a string field's value; ok is false for another wire
// type (which the generated decoder refuses).
func protoString(typ protowire.Type, v []byte) (string, bool) {
	return string(v), typ == protowire.BytesType
}

// protoBool is a bool field's value.
func protoBool(typ protowire.Type, v []byte) (bool, bool) {
	if typ != protowire.VarintType {
		return false, false
	}
	x, n := protowire.ConsumeVarint(v)
	return x != 0, n > 0
}

// protoMeta reads what the checks use of a pod's ObjectMeta encoding
// into p (name 1, namespace 3, the k8s-app entry of labels 11) and, when
// the owner references (13) name a controller, its reference; ok is false
// when there is none or the encoding is not what the generated decoder
// reads. Fields repeat as the generated decoder repeats them: the last
// string wins, every reference counts.
func protoMeta(b []byte, p *Pod, owners *[]OwnerRef) bool {
	refs := (*owners)[:0]
	defer func() { *owners = refs[:0] }()
	ok := protoFields(b, func(num protowire.Number, typ protowire.Type, v []byte) (bool, bool) {
		var ok bool
		switch num {
		case 1:
			p.Name, ok = protoString(typ, v)
		case 3:
			p.Namespace, ok = protoString(typ, v)
		case 11:
			var key, val string
			ok = typ == protowire.BytesType && protoFields(v, func(num protowire.Number, typ protowire.Type, v []byte) (bool, bool) {
				var ok bool
				switch num {
				case 1:
					key, ok = protoString(typ, v)
				case 2:
					val, ok = protoString(typ, v)
				default:
					return false, true
				}
				return true, ok
			})
			if key == "k8s-app" {
				p.App = val
			}
		case 13:
			var o OwnerRef
			ok = typ == protowire.BytesType && protoFields(v, func(num protowire.Number, typ protowire.Type, v []byte) (bool, bool) {
				var ok bool
				switch num {
				case 1:
					o.Kind, ok = protoString(typ, v)
				case 3:
					o.Name, ok = protoString(typ, v)
				case 5:
					o.APIVersion, ok = protoString(typ, v)
				case 6:
					var c bool
					c, ok = protoBool(typ, v)
					o.Controller = &c
				default:
					return false, true
				}
				return true, ok
			})
			refs = append(refs, o)
		default:
			return false, true
		}
		return true, ok
	})
	if !ok {
		return false
	}
	o := Meta{OwnerReferences: refs}.Controller()
	if o == nil {
		return false
	}
	p.Owner = *o
	return true
}

// protoStatus reads what the checks use of a PodStatus encoding: its
// phase (1) and, of each container status (8), the name (1), image (6),
// readiness (4) and waiting state (2, its waiting 1: reason 1, message 2). A
// message field that comes twice is merged, as the generated decoder
// merges it.
func protoStatus(b []byte, st *PodStatus) bool {
	return protoFields(b, func(num protowire.Number, typ protowire.Type, v []byte) (bool, bool) {
		var ok bool
		switch num {
		case 1:
			st.Phase, ok = protoString(typ, v)
		case 8:
			var cs ContainerStatus
			ok = typ == protowire.BytesType && protoFields(v, func(num protowire.Number, typ protowire.Type, v []byte) (bool, bool) {
				var ok bool
				switch num {
				case 1:
					cs.Name, ok = protoString(typ, v)
				case 6:
					cs.Image, ok = protoString(typ, v)
				case 4:
					cs.Ready, ok = protoBool(typ, v)
				case 2:
					ok = typ == protowire.BytesType && protoFields(v, func(num protowire.Number, typ protowire.Type, v []byte) (bool, bool) {
						if num != 1 {
							return false, true
						}
						if cs.State.Waiting == nil {
							cs.State.Waiting = &ContainerWaiting{}
						}
						w := cs.State.Waiting
						return true, typ == protowire.BytesType && protoFields(v, func(num protowire.Number, typ protowire.Type, v []byte) (bool, bool) {
							var ok bool
							switch num {
							case 1:
								w.Reason, ok = protoString(typ, v)
							case 2:
								w.Message, ok = protoString(typ, v)
							default:
								return false, true
							}
							return true, ok
						})
					})
				default:
					return false, true
				}
				return true, ok
			})
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
		default:
			return false, true
		}
		return true, ok
	})
}

// specNodeName reads spec.nodeName (PodSpec field 10) from a PodSpec's
// encoding without decoding the rest; the last one wins, as in the
// generated decoder.
func specNodeName(b []byte) (string, bool) {
	node := ""
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", false
		}
		b = b[n:]
		if num == 10 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return "", false
			}
			node = string(v)
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return "", false
		}
		b = b[m:]
	}
	return node, true
}

// addTypedPod stores a pod decoded from protobuf exactly as decodePod
// stores the same pod read as JSON: a pod a controller owns as a slim Pod
// built here (TestTypedPodSameAsJSON), a bare pod through its JSON form
// (rare, and it keeps the whole spec).
func (s *Snapshot) addTypedPod(p *corev1.Pod) error {
	o := typedController(p.OwnerReferences)
	if o == nil {
		data, err := json.Marshal(p)
		if err != nil {
			return err
		}
		return s.AddKind(KindPod, "v1", "Pod", data, Source{})
	}
	s.addOwnedPod(slimPod(&p.ObjectMeta, p.Spec.NodeName, &p.Status, o))
	return nil
}

// slimPod is the Pod decodePod keeps of an owned pod, from typed parts.
func slimPod(m *metav1.ObjectMeta, nodeName string, st *corev1.PodStatus, o *metav1.OwnerReference) *Pod {
	sp := &Pod{Namespace: m.Namespace, Name: m.Name, NodeName: nodeName, App: m.Labels["k8s-app"],
		Owner:  OwnerRef{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name},
		Status: PodStatus{Phase: string(st.Phase)}}
	if o.Controller != nil {
		c := *o.Controller
		sp.Owner.Controller = &c
	}
	if cs := st.ContainerStatuses; len(cs) > 0 {
		sp.Status.ContainerStatuses = make([]ContainerStatus, len(cs))
		for i := range cs {
			c := &sp.Status.ContainerStatuses[i]
			c.Name, c.Image, c.Ready = cs[i].Name, cs[i].Image, cs[i].Ready
			if w := cs[i].State.Waiting; w != nil {
				c.State.Waiting = &ContainerWaiting{Reason: w.Reason, Message: w.Message}
			}
		}
	}
	return sp
}

// typedController is Meta.Controller for typed owner references.
func typedController(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if c := refs[i].Controller; c != nil && *c {
			return &refs[i]
		}
	}
	if len(refs) == 1 {
		return &refs[0]
	}
	return nil
}

// readProtoList reads a LIST response in Kubernetes' protobuf encoding:
// the magic "k8s\x00", then a runtime.Unknown whose field 2 (raw) holds
// the List message, whose field 2 (items) repeats once per object. item
// is called with each object's bytes in turn, in a buffer reused for the
// next one (valid only during the call). Other fields are skipped.
func readProtoList(r *bufio.Reader, item func([]byte) error) error {
	magic := make([]byte, len(protoMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errNotProtobuf
		}
		return err
	}
	if !bytes.Equal(magic, protoMagic) {
		return errNotProtobuf
	}
	pr := &protoReader{r: r}
	seenList := false
	for {
		field, wire, err := pr.tag()
		if errors.Is(err, io.EOF) {
			if !seenList {
				return errors.New("protobuf LIST response without a list")
			}
			return nil
		}
		if err != nil {
			return err
		}
		if field != 2 || wire != wireBytes {
			if err := pr.skip(wire); err != nil {
				return err
			}
			continue
		}
		seenList = true
		size, err := pr.length()
		if err != nil {
			return err
		}
		if err := pr.list(size, item); err != nil {
			return err
		}
	}
}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// protoReader reads protobuf wire format from a stream, counting bytes.
type protoReader struct {
	r   *bufio.Reader
	n   int64 // bytes consumed
	buf []byte
}

func (p *protoReader) ReadByte() (byte, error) {
	b, err := p.r.ReadByte()
	if err == nil {
		p.n++
	}
	return b, err
}

func (p *protoReader) varint() (uint64, error) {
	start := p.n
	v, err := binary.ReadUvarint(p)
	if errors.Is(err, io.EOF) && p.n > start {
		err = io.ErrUnexpectedEOF
	}
	return v, err
}

// tag reads a field's key; io.EOF only when the stream ends before it.
func (p *protoReader) tag() (field uint64, wire int, err error) {
	k, err := p.varint()
	if err != nil {
		return 0, 0, err
	}
	if k>>3 == 0 {
		return 0, 0, fmt.Errorf("protobuf: field number 0 at byte %d", p.n)
	}
	return k >> 3, int(k & 7), nil
}

// length reads a length-delimited field's size.
func (p *protoReader) length() (int64, error) {
	v, err := p.varint()
	if err != nil {
		return 0, unexpected(err)
	}
	if v > 1<<40 {
		return 0, fmt.Errorf("protobuf: length %d at byte %d", v, p.n)
	}
	return int64(v), nil
}

// discard skips n bytes.
func (p *protoReader) discard(n int64) error {
	for n > 0 {
		step := min(n, 1<<30)
		d, err := p.r.Discard(int(step))
		p.n += int64(d)
		if err != nil {
			return unexpected(err)
		}
		n -= step
	}
	return nil
}

// skip skips a field's value of the given wire type.
func (p *protoReader) skip(wire int) error {
	switch wire {
	case wireVarint:
		_, err := p.varint()
		return unexpected(err)
	case wireFixed64:
		return p.discard(8)
	case wireFixed32:
		return p.discard(4)
	case wireBytes:
		n, err := p.length()
		if err != nil {
			return err
		}
		return p.discard(n)
	}
	return fmt.Errorf("protobuf: wire type %d at byte %d", wire, p.n)
}

// list reads a List message of size bytes, calling item for each of its
// items (field 2).
func (p *protoReader) list(size int64, item func([]byte) error) error {
	end := p.n + size
	for p.n < end {
		field, wire, err := p.tag()
		if err != nil {
			return unexpected(err)
		}
		if field != 2 || wire != wireBytes {
			if err := p.skip(wire); err != nil {
				return err
			}
			continue
		}
		n, err := p.length()
		if err != nil {
			return err
		}
		if n > maxProtoItem {
			return fmt.Errorf("protobuf: list item of %d bytes at byte %d (the limit is %d)", n, p.n, maxProtoItem)
		}
		if int64(cap(p.buf)) < n {
			p.buf = make([]byte, n)
		}
		b := p.buf[:n]
		read, err := io.ReadFull(p.r, b)
		p.n += int64(read)
		if err != nil {
			return unexpected(err)
		}
		if err := item(b); err != nil {
			return err
		}
	}
	if p.n != end {
		return fmt.Errorf("protobuf: list ends at byte %d, past its length (%d)", p.n, end)
	}
	return nil
}

// unexpected turns io.EOF inside a message into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
