package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
)

var _ core.HostClient = (*Client)(nil)

// ListHosts implements core.HostClient.
func (c *Client) ListHosts(ctx context.Context) ([]core.Host, error) {
	var hs []core.Host
	return hs, c.do(ctx, "GET", "/v1/hosts", nil, &hs)
}

// GetHost implements core.HostClient.
func (c *Client) GetHost(ctx context.Context, name string) (core.Host, error) {
	var h core.Host
	return h, c.do(ctx, "GET", "/v1/hosts/"+esc(name), nil, &h)
}

// AddHost implements core.HostClient.
func (c *Client) AddHost(ctx context.Context, in core.HostInput) (core.Host, error) {
	var h core.Host
	return h, c.do(ctx, "POST", "/v1/hosts", in, &h)
}

// RemoveHost implements core.HostClient.
func (c *Client) RemoveHost(ctx context.Context, name string) (core.Host, error) {
	var h core.Host
	return h, c.do(ctx, "DELETE", "/v1/hosts/"+esc(name), nil, &h)
}

// CheckHost implements core.HostClient.
func (c *Client) CheckHost(ctx context.Context, name string) (core.HostCheck, error) {
	var r core.HostCheck
	return r, c.do(ctx, "POST", "/v1/hosts/"+esc(name)+"/check", nil, &r)
}
