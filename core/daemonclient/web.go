package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// Web is the client's web inbox area: pairing and devices.
type Web struct{ c *caller }

var _ api.WebClient = (*Web)(nil)

// WebPair implements api.WebClient.
func (w *Web) WebPair(ctx context.Context, in api.WebPairInput) (api.WebPairing, error) {
	return call(ctx, w.c, wire.WebPair, in)
}

// WebDevices implements api.WebClient.
func (w *Web) WebDevices(ctx context.Context) ([]api.WebDevice, error) {
	return call(ctx, w.c, wire.WebDevices, wire.None{})
}

// WebRevoke implements api.WebClient.
func (w *Web) WebRevoke(ctx context.Context, id string) (api.WebDevice, error) {
	return call(ctx, w.c, wire.WebRevoke, wire.Key(id))
}
