package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// Default boot-id and reboot commands.
const (
	linuxBootID     = "cat /proc/sys/kernel/random/boot_id"
	windowsBootID   = "(Get-CimInstance -ClassName Win32_OperatingSystem).LastBootUpTime.ToUniversalTime().ToString('o')"
	linuxReboot     = "systemctl reboot"
	windowsReboot   = "Restart-Computer -Force"
	backoffStart    = 500 * time.Millisecond
	backoffMax      = 10 * time.Second
	rebootPollDelay = 2 * time.Second
)

// Reconnect drops the connection and dials again, retrying with
// exponential backoff (0.5s doubling to 10s) until it succeeds or ctx ends.
// Give ctx a deadline: a host that never comes back fails with the last
// connection error. A changed host key is never retried.
func (c *Client) Reconnect(ctx context.Context) error {
	c.mu.Lock()
	_ = c.closeLocked()
	c.mu.Unlock()
	wait := backoffStart
	var last error
	for {
		err := c.connect(ctx)
		if err == nil {
			return nil
		}
		if !ended(ctx) || last == nil {
			last = err // keep the most telling error, not the one cut short
		}
		var changed *HostKeyChangedError
		var unknown *UnknownHostKeyError
		if errors.As(err, &changed) || errors.As(err, &unknown) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reconnecting to %s: %w (last attempt: %v)", c.cfg.Host, ctx.Err(), last)
		case <-time.After(wait):
		}
		wait = min(2*wait, backoffMax)
	}
}

// ended reports whether ctx is done or its deadline has passed. A
// handshake cut short by the deadline fails on the socket's deadline (the
// same time), which can come a moment before ctx reports it ended.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// BootID returns a value that changes on every boot of the host.
func (c *Client) BootID(ctx context.Context) (string, error) {
	cmd := c.cfg.BootIDCommand
	if cmd == "" {
		cmd = linuxBootID
		if c.cfg.OS == engine.Windows {
			cmd = windowsBootID
		}
	}
	res, err := c.Run(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("reading the boot id of %s: %w", c.cfg.Host, err)
	}
	id := string(bytes.TrimSpace(res.Stdout))
	if id == "" {
		return "", fmt.Errorf("reading the boot id of %s: empty output", c.cfg.Host)
	}
	return id, nil
}

// Reboot restarts the host and returns once it is back with a new boot id
// and the client is reconnected. Bound ctx with the time a reboot may take
// (Windows feature installs can take many minutes).
func (c *Client) Reboot(ctx context.Context) error {
	before, err := c.BootID(ctx)
	if err != nil {
		return err
	}
	cmd := c.cfg.RebootCommand
	if cmd == "" {
		cmd = linuxReboot
		if c.cfg.OS == engine.Windows {
			cmd = windowsReboot
		}
	}
	// The command may or may not return before the connection drops; its
	// error carries no information, the boot id does.
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, _ = c.Run(rctx, cmd)
	cancel()
	return c.WaitForReboot(ctx, before)
}

// WaitForReboot reconnects until the host reports a boot id different from
// before (the reboot may be triggered by a script rather than Reboot).
func (c *Client) WaitForReboot(ctx context.Context, before string) error {
	for {
		if err := c.Reconnect(ctx); err != nil {
			return fmt.Errorf("waiting for %s to reboot: %w", c.cfg.Host, err)
		}
		id, err := c.BootID(ctx)
		if err == nil && id != before {
			return nil
		}
		// Still the old boot (the host has not gone down yet) or the
		// connection dropped while reading: try again shortly.
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to reboot: %w", c.cfg.Host, ctx.Err())
		case <-time.After(rebootPollDelay):
		}
	}
}
