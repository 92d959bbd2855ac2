package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// Hosts is the client's hosts area: the machines agents run on.
type Hosts struct{ c *caller }

var _ api.HostClient = (*Hosts)(nil)

// ListHosts implements api.HostClient.
func (h *Hosts) ListHosts(ctx context.Context) ([]core.Host, error) {
	return call(ctx, h.c, wire.ListHosts, wire.None{})
}

// GetHost implements api.HostClient.
func (h *Hosts) GetHost(ctx context.Context, name string) (core.Host, error) {
	return call(ctx, h.c, wire.GetHost, wire.Key(name))
}

// AddHost implements api.HostClient.
func (h *Hosts) AddHost(ctx context.Context, in api.HostInput) (core.Host, error) {
	return call(ctx, h.c, wire.AddHost, in)
}

// RemoveHost implements api.HostClient.
func (h *Hosts) RemoveHost(ctx context.Context, name string) (core.Host, error) {
	return call(ctx, h.c, wire.RemoveHost, wire.Key(name))
}

// CheckHost implements api.HostClient.
func (h *Hosts) CheckHost(ctx context.Context, name string) (api.HostCheck, error) {
	return call(ctx, h.c, wire.CheckHost, wire.Key(name))
}

// EditHost implements api.HostClient.
func (h *Hosts) EditHost(ctx context.Context, name string, in api.HostEdit) (core.Host, error) {
	return call(ctx, h.c, wire.EditHost, wire.Keyed[api.HostEdit]{Key: name, In: in})
}
