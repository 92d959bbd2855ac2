package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

var _ core.HostClient = (*Client)(nil)

// ListHosts implements core.HostClient.
func (c *Client) ListHosts(ctx context.Context) ([]core.Host, error) {
	return call(ctx, c, wire.ListHosts, wire.None{})
}

// GetHost implements core.HostClient.
func (c *Client) GetHost(ctx context.Context, name string) (core.Host, error) {
	return call(ctx, c, wire.GetHost, wire.Key(name))
}

// AddHost implements core.HostClient.
func (c *Client) AddHost(ctx context.Context, in core.HostInput) (core.Host, error) {
	return call(ctx, c, wire.AddHost, in)
}

// RemoveHost implements core.HostClient.
func (c *Client) RemoveHost(ctx context.Context, name string) (core.Host, error) {
	return call(ctx, c, wire.RemoveHost, wire.Key(name))
}

// CheckHost implements core.HostClient.
func (c *Client) CheckHost(ctx context.Context, name string) (core.HostCheck, error) {
	return call(ctx, c, wire.CheckHost, wire.Key(name))
}

// EditHost implements core.HostClient.
func (c *Client) EditHost(ctx context.Context, name string, in core.HostEdit) (core.Host, error) {
	return call(ctx, c, wire.EditHost, wire.Keyed[core.HostEdit]{Key: name, In: in})
}
