package csr

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	netutils "k8s.io/utils/net"
)

// Checker is one named check. Fn never panics on any Input that Prepare can
// produce, and says Unknown only for facts that can change by waiting.
type Checker struct {
	Name string
	// Summary is one short line for the command's help.
	Summary string
	// Doc says what is checked and why (docs/csr.md is written from it).
	Doc string
	Fn  func(*Input) (Verdict, string)
}

// Checks is the ordered list of every check. All are evaluated and all are
// reported for every request.
func Checks() []Checker {
	return []Checker{
		{"signer", "spec.signerName is kubernetes.io/kubelet-serving",
			"spec.signerName is kubernetes.io/kubelet-serving; other signers belong to other approvers.", checkSigner},
		{"requester", "system:node:NAME in group system:nodes (set by the API server)",
			"spec.username is system:node:NAME and spec.groups contains system:nodes: the API server sets both from the credentials that created the CSR, so only a kubelet can pass.", checkRequester},
		{"request-pem", "one PEM CERTIFICATE REQUEST that decodes",
			"spec.request is exactly one PEM CERTIFICATE REQUEST block that decodes as PKCS#10.", checkRequestPEM},
		{"self-signature", "signed by the key it certifies",
			"the request is signed by the key it asks a certificate for (proof of possession).", checkSelfSignature},
		{"subject", "CN = the requester, O = exactly [system:nodes]",
			"subject CN equals the requester (system:node:NAME) and O is exactly [system:nodes], as the kubelet writes it.", checkSubject},
		{"public-key", "RSA 2048-8192, ECDSA P-256/384/521 or Ed25519",
			"the key is RSA 2048-8192 bits, ECDSA P-256/P-384/P-521 or Ed25519.", checkPublicKey},
		{"usages", "server auth; only digital signature, key encipherment (RSA)",
			"usages include server auth and stay within digital signature, key encipherment (RSA keys only) and server auth: no client auth, no CA or signing usages.", checkUsages},
		{"san-kinds", "a DNS name or IP; no email addresses or URIs",
			"at least one DNS name or IP address, and no email addresses or URIs.", checkSANKinds},
		{"dns-names", "-f: NAME, NAME.dnsSuffix; else names only this Node has",
			"with a spec, every DNS name is NAME or NAME.dnsSuffix of a node in the spec; without one, NAME or one of the Node's Hostname/InternalDNS/ExternalDNS addresses, refused when it collides with another Node's name or reported name, or the API server's; never a kubernetes* Service name, localhost or a wildcard.", checkDNSNames},
		{"ip-addresses", "-f: the spec's address; else the Node's IPs only it has",
			"every IP address (normalised: IPv4-mapped IPv6 is IPv4) is, with a spec, the spec's address for the node (the inventory wins); without one, one of the Node's InternalIP/ExternalIP addresses that no other Node reports and that is not the API server's; never unspecified, loopback or multicast.", checkIPAddresses},
		{"node-exists", "the Node is registered",
			"the Node object NAME exists; while it does not, the request stays pending.", checkNodeExists},
		{"expiration", "expirationSeconds at most --max-expiration",
			"spec.expirationSeconds, when set, is at most the cap (--max-expiration, default one year).", checkExpiration},
	}
}

// IsNodeNotFound reports whether err from a Node lookup means the Node is not
// registered (as opposed to an API failure).
func IsNodeNotFound(err error) bool { return apierrors.IsNotFound(err) }

func checkSigner(in *Input) (Verdict, string) {
	if in.CSR.Spec.SignerName != SignerName {
		return Fail, fmt.Sprintf("signer is %q, not %q", in.CSR.Spec.SignerName, SignerName)
	}
	return Pass, ""
}

func checkRequester(in *Input) (Verdict, string) {
	user := in.CSR.Spec.Username
	if in.NodeName == "" {
		return Fail, fmt.Sprintf("requester %q is not a node (want %sNAME)", user, NodeUserPrefix)
	}
	if msgs := validNodeName(in.NodeName); msgs != "" {
		return Fail, fmt.Sprintf("requester %q: node name %s", user, msgs)
	}
	if !slices.Contains(in.CSR.Spec.Groups, NodesGroup) {
		return Fail, fmt.Sprintf("requester %q is not in group %s (groups %v)", user, NodesGroup, in.CSR.Spec.Groups)
	}
	return Pass, ""
}

// validNodeName applies the Node name rules (a DNS subdomain, lower case).
func validNodeName(name string) string {
	if len(name) == 0 || len(name) > 253 {
		return fmt.Sprintf("%q has %d characters (1-253)", name, len(name))
	}
	for _, label := range strings.Split(name, ".") {
		if !isDNSLabel(label) {
			return fmt.Sprintf("%q is not a lower-case DNS subdomain", name)
		}
	}
	return ""
}

func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

func checkRequestPEM(in *Input) (Verdict, string) {
	if in.ParseErr != nil {
		return Fail, in.ParseErr.Error()
	}
	return Pass, ""
}

func checkSelfSignature(in *Input) (Verdict, string) {
	if in.Request == nil {
		return Skip, "request did not decode"
	}
	if in.SignatureErr != nil {
		return Fail, fmt.Sprintf("self-signature does not verify: %v", in.SignatureErr)
	}
	return Pass, ""
}

func checkSubject(in *Input) (Verdict, string) {
	if in.Request == nil {
		return Skip, "request did not decode"
	}
	var problems []string
	if cn := in.Request.Subject.CommonName; cn != in.CSR.Spec.Username {
		problems = append(problems, fmt.Sprintf("CN %q differs from the requester %q", cn, in.CSR.Spec.Username))
	}
	if o := in.Request.Subject.Organization; len(o) != 1 || o[0] != NodesGroup {
		problems = append(problems, fmt.Sprintf("O is %q, want exactly [%s]", o, NodesGroup))
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	return Pass, ""
}

func checkPublicKey(in *Input) (Verdict, string) {
	if in.Request == nil {
		return Skip, "request did not decode"
	}
	switch k := in.Request.PublicKey.(type) {
	case *rsa.PublicKey:
		if bits := k.N.BitLen(); bits < 2048 || bits > 8192 {
			return Fail, fmt.Sprintf("RSA key of %d bits (want 2048-8192)", bits)
		}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
		default:
			return Fail, fmt.Sprintf("ECDSA curve %s is not P-256, P-384 or P-521", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	default:
		return Fail, fmt.Sprintf("public key type %T is not RSA, ECDSA or Ed25519", k)
	}
	return Pass, ""
}

func checkUsages(in *Input) (Verdict, string) {
	_, isRSA := publicKeyOf(in).(*rsa.PublicKey)
	var problems []string
	hasServerAuth := false
	for _, u := range in.CSR.Spec.Usages {
		switch u {
		case certv1.UsageServerAuth:
			hasServerAuth = true
		case certv1.UsageDigitalSignature:
		case certv1.UsageKeyEncipherment:
			if in.Request != nil && !isRSA {
				problems = append(problems, fmt.Sprintf("%q is only for RSA keys; this key is %s", u, keyKind(in.Request.PublicKey)))
			}
		default:
			problems = append(problems, fmt.Sprintf("usage %q is not allowed for a kubelet serving certificate", u))
		}
	}
	if !hasServerAuth {
		problems = append(problems, fmt.Sprintf("usages %q lack %q", in.CSR.Spec.Usages, certv1.UsageServerAuth))
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	return Pass, ""
}

func publicKeyOf(in *Input) any {
	if in.Request == nil {
		return nil
	}
	return in.Request.PublicKey
}

func keyKind(k any) string {
	switch k.(type) {
	case *rsa.PublicKey:
		return "RSA"
	case *ecdsa.PublicKey:
		return "ECDSA"
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return fmt.Sprintf("%T", k)
}

func checkSANKinds(in *Input) (Verdict, string) {
	r := in.Request
	if r == nil {
		return Skip, "request did not decode"
	}
	var problems []string
	if len(r.EmailAddresses) > 0 {
		problems = append(problems, fmt.Sprintf("email names %q are not allowed", r.EmailAddresses))
	}
	if len(r.URIs) > 0 {
		uris := make([]string, len(r.URIs))
		for i, u := range r.URIs {
			uris[i] = u.String()
		}
		problems = append(problems, fmt.Sprintf("URI names %q are not allowed", uris))
	}
	if len(r.DNSNames) == 0 && len(r.IPAddresses) == 0 {
		problems = append(problems, "no DNS name or IP address: a serving certificate needs one")
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	return Pass, ""
}

// allowedDNSNames is the set of DNS names the node may claim without looking
// at the Node object, and the set it may claim from the Node's addresses.
// With an inventory the names come from it alone: the node's name and
// NAME.dnsSuffix, nothing when the node is not in it.
func allowedDNSNames(in *Input) (static, fromNode map[string]bool) {
	static, fromNode = map[string]bool{}, map[string]bool{}
	own := strings.ToLower(in.NodeName)
	if in.Inventory != nil {
		if _, ok := in.Inventory.NodeAddress(in.NodeName); !ok {
			return static, fromNode
		}
		static[own] = true
		if s := strings.Trim(strings.ToLower(in.Inventory.DNSSuffix()), "."); s != "" {
			static[own+"."+s] = true
		}
		return static, fromNode
	}
	static[own] = true
	if in.Node != nil {
		for _, a := range in.Node.Status.Addresses {
			switch a.Type {
			case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
				if a.Address != "" && netutils.ParseIPSloppy(a.Address) == nil {
					fromNode[strings.ToLower(a.Address)] = true
				}
			}
		}
	}
	return static, fromNode
}

// isLocalhost reports whether n is localhost or under it (RFC 6761): a
// name every machine gives itself, never one node's.
func isLocalhost(n string) bool {
	n = normName(n)
	return n == "localhost" || strings.HasSuffix(n, ".localhost")
}

func checkDNSNames(in *Input) (Verdict, string) {
	if in.Request == nil {
		return Skip, "request did not decode"
	}
	if len(in.Request.DNSNames) == 0 {
		return Pass, ""
	}
	if in.NodeName == "" {
		return Skip, "requester is not a node; no names belong to it"
	}
	if in.Inventory != nil {
		if _, ok := in.Inventory.NodeAddress(in.NodeName); !ok {
			return Fail, fmt.Sprintf("node %s is not in the cluster spec, so no DNS name belongs to it", in.NodeName)
		}
	}
	static, fromNode := allowedDNSNames(in)
	var notOwn, problems, undecided []string
	for _, n := range in.Request.DNSNames {
		l := strings.ToLower(n)
		switch {
		case strings.Contains(l, "*"):
			problems = append(problems, fmt.Sprintf("wildcard %q", n))
		case isLocalhost(l):
			problems = append(problems, fmt.Sprintf("%q is every machine's own name, never one node's", n))
		case isServiceName(l):
			problems = append(problems, fmt.Sprintf("%q is a name of the API server's Service default/kubernetes", n))
		case static[l] && in.Inventory != nil:
			// The inventory names the node.
		case static[l]:
			if in.Cluster == nil {
				undecided = append(undecided, n)
				continue
			}
			if claims := ownNameClaims(in); len(claims) > 0 {
				if claimsNeedNode(in) {
					undecided = append(undecided, n)
					continue
				}
				problems = append(problems, fmt.Sprintf("%q, node %s's own name, collides with %s", n, in.NodeName, strings.Join(claims, " and ")))
			}
		case fromNode[l]:
			if in.Cluster == nil {
				undecided = append(undecided, n)
				continue
			}
			if claims := statusNameClaims(in, l); len(claims) > 0 {
				problems = append(problems, fmt.Sprintf("%q, which Node %s reports about itself, collides with %s", n, in.NodeName, strings.Join(claims, " and ")))
			}
		case in.Inventory == nil && (in.Node == nil || len(in.Node.Status.Addresses) == 0):
			// The Node is not there, or has not reported its addresses
			// yet: the answer can change.
			undecided = append(undecided, n)
		default:
			notOwn = append(notOwn, fmt.Sprintf("%q", n))
		}
	}
	if len(notOwn) > 0 {
		source := "allowed"
		if in.Inventory != nil {
			source = "allowed by the cluster spec"
		}
		problems = append([]string{fmt.Sprintf("%s %s %s not belong to node %s (%s: %s)", plural(len(notOwn), "DNS name", "DNS names"), strings.Join(notOwn, ", "), plural(len(notOwn), "does", "do"), in.NodeName, source, setString(static, fromNode))}, problems...)
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	if len(undecided) > 0 {
		if in.ClusterErr != nil {
			return Unknown, fmt.Sprintf("DNS names %q cannot be compared with the other Nodes and the API server: %v", undecided, in.ClusterErr)
		}
		if in.Cluster == nil && in.Node != nil && len(in.Node.Status.Addresses) > 0 {
			return Unknown, fmt.Sprintf("DNS names %q were not compared with the other Nodes and the API server", undecided)
		}
		return Unknown, fmt.Sprintf("DNS names %q can only be checked against Node %s's addresses, which it has not reported yet", undecided, in.NodeName)
	}
	return Pass, ""
}

// claimsNeedNode reports whether the own name's collisions could vanish
// once the Node is registered: the API server's names are allowed to a
// control-plane Node, and until the Node is read its labels are unknown.
// A collision with another Node's name stays.
func claimsNeedNode(in *Input) bool {
	return in.Node == nil && len(nodeNameClaims(in.NodeName, in.NodeName, in.Cluster)) == 0
}

// NormalizeIP turns any spelling of an address into its canonical netip form:
// IPv4-mapped IPv6 (::ffff:a.b.c.d) becomes IPv4, zones are dropped.
func NormalizeIP(ip net.IP) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// parseNodeIP parses an address as the kubelet does (leading zeros allowed)
// and normalises it.
func parseNodeIP(s string) (netip.Addr, bool) {
	ip := netutils.ParseIPSloppy(s)
	if ip == nil {
		return netip.Addr{}, false
	}
	return NormalizeIP(ip)
}

// nodeIPs are the addresses a Node reports that may appear in its serving
// certificate: InternalIP, ExternalIP, and a Hostname that is an address (the
// kubelet puts those into its request too).
func nodeIPs(n *corev1.Node) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName:
			if ip, ok := parseNodeIP(a.Address); ok {
				out[ip] = true
			}
		}
	}
	return out
}

func checkIPAddresses(in *Input) (Verdict, string) {
	if in.Request == nil {
		return Skip, "request did not decode"
	}
	ips := in.Request.IPAddresses
	if len(ips) == 0 {
		return Pass, ""
	}
	if in.NodeName == "" {
		return Skip, "requester is not a node; no addresses belong to it"
	}
	var allowed map[netip.Addr]bool
	source := ""
	if in.Inventory != nil {
		a, ok := in.Inventory.NodeAddress(in.NodeName)
		if !ok {
			return Fail, fmt.Sprintf("node %s is not in the cluster spec, so no IP address belongs to it", in.NodeName)
		}
		allowed = map[netip.Addr]bool{a.Unmap().WithZone(""): true}
		source = "the cluster spec"
	} else if in.Node != nil {
		allowed = nodeIPs(in.Node)
		source = "Node " + in.NodeName + "'s InternalIP/ExternalIP"
		if len(allowed) == 0 {
			// Registered but no address reported yet: the answer can
			// change, so decide later.
			allowed, source = nil, ""
		}
	}
	var bad, collisions []string
	compared := in.Inventory != nil || in.Cluster != nil
	for _, raw := range ips {
		a, ok := NormalizeIP(raw)
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("malformed %x", []byte(raw)))
		case a.IsUnspecified() || a.IsLoopback() || a.IsMulticast():
			bad = append(bad, fmt.Sprintf("%s (unspecified, loopback or multicast)", spell(raw, a)))
		case allowed == nil:
			// no inventory and no Node: decided below
		case !allowed[a]:
			bad = append(bad, spell(raw, a))
		case in.Inventory == nil && in.Cluster != nil:
			// The Node reports it about itself: it is the node's only
			// when no other Node and not the API server claims it.
			if claims := addrClaims(in, a); len(claims) > 0 {
				collisions = append(collisions, fmt.Sprintf("%s, which Node %s reports about itself, is %s", spell(raw, a), in.NodeName, strings.Join(claims, " and ")))
			}
		}
	}
	if len(bad) > 0 || len(collisions) > 0 {
		var problems []string
		switch {
		case len(bad) == 0:
		case source == "":
			problems = append(problems, fmt.Sprintf("%s %s can never belong to a node", plural(len(bad), "IP address", "IP addresses"), strings.Join(bad, ", ")))
		default:
			problems = append(problems, fmt.Sprintf("%s %s %s not node %s's (allowed by %s: %s)", plural(len(bad), "IP address", "IP addresses"), strings.Join(bad, ", "), plural(len(bad), "is", "are"), in.NodeName, source, addrString(allowed)))
		}
		return Fail, strings.Join(append(problems, collisions...), "; ")
	}
	if allowed == nil {
		return Unknown, fmt.Sprintf("IP addresses can only be checked against Node %s's addresses, which it has not reported yet", in.NodeName)
	}
	if !compared {
		if in.ClusterErr != nil {
			return Unknown, fmt.Sprintf("IP addresses cannot be compared with the other Nodes and the API server: %v", in.ClusterErr)
		}
		return Unknown, "IP addresses were not compared with the other Nodes and the API server"
	}
	return Pass, ""
}

// spell shows an address as requested and, when that differs, as normalised.
func spell(raw net.IP, a netip.Addr) string {
	if len(raw) == net.IPv6len && a.Is4() {
		return fmt.Sprintf("::ffff:%s (IPv4-mapped %s)", a, a)
	}
	return a.String()
}

func checkNodeExists(in *Input) (Verdict, string) {
	if in.NodeName == "" {
		return Skip, "requester is not a node"
	}
	switch {
	case in.Node != nil:
		return Pass, ""
	case in.NodeErr == nil:
		return Unknown, fmt.Sprintf("Node %s was not looked up", in.NodeName)
	case IsNodeNotFound(in.NodeErr):
		return Unknown, fmt.Sprintf("Node %s is not registered yet", in.NodeName)
	default:
		return Unknown, fmt.Sprintf("looking up Node %s: %v", in.NodeName, in.NodeErr)
	}
}

func checkExpiration(in *Input) (Verdict, string) {
	s := in.CSR.Spec.ExpirationSeconds
	if s == nil {
		return Pass, ""
	}
	limit := in.MaxExpiration
	if limit <= 0 {
		limit = DefaultMaxExpiration
	}
	if d := time.Duration(*s) * time.Second; *s < 0 || d > limit {
		return Fail, fmt.Sprintf("expirationSeconds %d (%s) is more than the cap of %s", *s, d, limit)
	}
	return Pass, ""
}

func setString(sets ...map[string]bool) string {
	var all []string
	for _, s := range sets {
		for k := range s {
			all = append(all, k)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	return strings.Join(all, ", ")
}

func addrString(m map[netip.Addr]bool) string {
	var all []string
	for a := range m {
		all = append(all, a.String())
	}
	slices.Sort(all)
	if len(all) == 0 {
		return "none"
	}
	return strings.Join(all, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
