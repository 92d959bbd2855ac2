package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// Hosts is the client's hosts area: the machines agents run on.
type Hosts struct{ c *caller }

var _ core.HostClient = (*Hosts)(nil)

// ListHosts implements core.HostClient.
func (h *Hosts) ListHosts(ctx context.Context) ([]core.Host, error) {
	return call(ctx, h.c, wire.ListHosts, wire.None{})
}

// GetHost implements core.HostClient.
func (h *Hosts) GetHost(ctx context.Context, name string) (core.Host, error) {
	return call(ctx, h.c, wire.GetHost, wire.Key(name))
}

// AddHost implements core.HostClient.
func (h *Hosts) AddHost(ctx context.Context, in core.HostInput) (core.Host, error) {
	return call(ctx, h.c, wire.AddHost, in)
}

// RemoveHost implements core.HostClient.
func (h *Hosts) RemoveHost(ctx context.Context, name string) (core.Host, error) {
	return call(ctx, h.c, wire.RemoveHost, wire.Key(name))
}

// CheckHost implements core.HostClient.
func (h *Hosts) CheckHost(ctx context.Context, name string) (core.HostCheck, error) {
	return call(ctx, h.c, wire.CheckHost, wire.Key(name))
}

// EditHost implements core.HostClient.
func (h *Hosts) EditHost(ctx context.Context, name string, in core.HostEdit) (core.Host, error) {
	return call(ctx, h.c, wire.EditHost, wire.Keyed[core.HostEdit]{Key: name, In: in})
}
