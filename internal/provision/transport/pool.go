package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Pool holds one lazily dialled client per host, shared by the phases of a
// run. It is safe for concurrent use; a host is dialled once even when
// several phases ask at the same time.
type Pool struct {
	configs map[string]Config

	mu      sync.Mutex
	clients map[string]*Client
	dialing map[string]*sync.Mutex
}

// NewPool returns a pool for the given configs, keyed by Config.Host.
func NewPool(configs ...Config) *Pool {
	p := &Pool{configs: map[string]Config{}, clients: map[string]*Client{}, dialing: map[string]*sync.Mutex{}}
	for _, c := range configs {
		p.configs[c.Host] = c
		p.dialing[c.Host] = &sync.Mutex{}
	}
	return p
}

// Get returns the client of host, dialling it on first use.
func (p *Pool) Get(ctx context.Context, host string) (*Client, error) {
	p.mu.Lock()
	cfg, ok := p.configs[host]
	lock := p.dialing[host]
	p.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no SSH configuration for host %q", host)
	}
	lock.Lock()
	defer lock.Unlock()
	p.mu.Lock()
	c := p.clients[host]
	p.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.clients[host] = c
	p.mu.Unlock()
	return c, nil
}

// Close closes every client.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for h, c := range p.clients {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", h, err))
		}
		delete(p.clients, h)
	}
	return errors.Join(errs...)
}
