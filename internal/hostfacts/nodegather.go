package hostfacts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// Conn is the part of an SSH client (transport.Client) the node script
// needs.
type Conn interface {
	Config() transport.Config
	// RunArgs runs a Linux script the transport's way (sh -c, through
	// sudo -n when the node's connection says so) with positional
	// arguments, the script's $1, $2, ...
	RunArgs(ctx context.Context, script string, args []string, stdin io.Reader, l transport.Limits) (*transport.Result, error)
	// RunLimited runs a script the OS's way (on Windows PowerShell
	// -EncodedCommand, or an upload run with -File when that command line
	// would be longer than cmd.exe accepts, as the node script's is).
	RunLimited(ctx context.Context, script string, stdin io.Reader, l transport.Limits) (*transport.Result, error)
}

// MaxNodeBytes is how much a node's script may print: its output is parsed
// whole, so a node that prints more (a compromised one answering with
// hundreds of MiB) fails with a message saying how much it sent, and the
// memory gathering needs stays bounded. A real node prints well under a
// MiB (a 5,000-node cluster's routes, neighbours and FDB entries about 3).
const MaxNodeBytes = 16 << 20

// API is the cluster API's address the node script probes.
type API struct {
	Host string
	Port int
}

// NodeLinuxArgs are the Linux node script's positional arguments: the
// marker, the API host and port, its $1, $2, $3 (data, never shell text).
func NodeLinuxArgs(marker string, api API) []string {
	return []string{marker, api.Host, strconv.Itoa(api.Port)}
}

// NodeWindowsInput is the Windows node script's standard input.
func NodeWindowsInput(api API) []byte {
	b, _ := json.Marshal(struct {
		APIHost string `json:"apiHost"`
		APIPort int    `json:"apiPort"`
	}{api.Host, api.Port})
	return append(b, '\n')
}

// GatherNode samples the node's clock with a command of its own, then runs
// the node script over conn and parses its output. The output is also
// written to spill as it arrives, when spill is not nil (node diagnose's
// --collect keeps it when it is too long to parse); a longer output than
// MaxNodeBytes is a *transport.OutputLimitError.
func GatherNode(ctx context.Context, conn Conn, node string, api API, spill io.Writer) (*Node, error) {
	// Nothing can carry a NUL, and no API host holds a line break: refused
	// here, never sent.
	if strings.ContainsAny(api.Host, "\x00\n\r") {
		return nil, fmt.Errorf("the API host %q contains a NUL or a line break", api.Host)
	}
	cfg := conn.Config()
	clock := SampleClock(ctx, scriptRunner{conn}, cfg.OS)
	var f *Node
	switch cfg.OS {
	case engine.Windows:
		res, err := conn.RunLimited(ctx, NodeWindowsScript, bytes.NewReader(NodeWindowsInput(api)), transport.Limits{Max: MaxNodeBytes, Spill: spill})
		if err != nil {
			return nil, fmt.Errorf("gathering on %s: %w", node, err)
		}
		if f, err = ParseNodeWindows(node, res.Stdout); err != nil {
			return nil, err
		}
	default:
		marker := NewMarker()
		res, err := conn.RunArgs(ctx, NodeLinuxScript, NodeLinuxArgs(marker, api), nil, transport.Limits{Max: MaxNodeBytes, Spill: spill})
		if err != nil {
			return nil, fmt.Errorf("gathering on %s: %w", node, err)
		}
		if f, err = ParseNodeLinux(node, res.Stdout, marker); err != nil {
			return nil, err
		}
	}
	if clock.Sampled {
		clock.Synced = f.Clock.Synced
		f.Clock = clock
	} else if f.Clock.Sampled {
		// Only the script's own sample: no bracket to measure against.
		f.Clock.Sampled = false
		f.Clock.Detail = clock.Detail
	}
	return f, nil
}

// scriptRunner runs a script through the connection the OS's way.
type scriptRunner struct{ conn Conn }

func (r scriptRunner) Run(ctx context.Context, script string) (*transport.Result, error) {
	return r.conn.RunLimited(ctx, script, nil, transport.Limits{})
}
