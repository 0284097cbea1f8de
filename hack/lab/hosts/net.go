package hosts

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"net/netip"
	"strings"
)

// CheckRoutes refuses a lab network that overlaps a route the host already
// has on another interface (the lab would shadow it, or leak into it).
// routes is the content of /proc/net/route.
func CheckRoutes(routes string, network netip.Prefix, bridge string) error {
	for i, line := range strings.Split(routes, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 8 {
			continue
		}
		dst, err1 := hexAddr(f[1])
		mask, err2 := hex.DecodeString(f[7])
		if err1 != nil || err2 != nil || len(mask) != 4 {
			return fmt.Errorf("/proc/net/route line %d: cannot read %q", i+1, line)
		}
		ones := bits.OnesCount32(binary.LittleEndian.Uint32(mask))
		if ones == 0 || f[0] == bridge {
			continue // the default route leads off the machine, not into the lab network
		}
		r := netip.PrefixFrom(dst, ones).Masked()
		if r.Overlaps(network) {
			return fmt.Errorf("the lab's node network %s overlaps the host's route %s on %s; use another nodeCIDR", network, r, f[0])
		}
	}
	return nil
}

// hexAddr reads an IPv4 address as /proc/net/route prints it
// (little-endian hex).
func hexAddr(s string) (netip.Addr, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 4 {
		return netip.Addr{}, fmt.Errorf("bad address %q", s)
	}
	return netip.AddrFrom4([4]byte{b[3], b[2], b[1], b[0]}), nil
}
