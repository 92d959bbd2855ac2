package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core/wire"
)

// call performs one operation of the table (core/wire): its method, its
// path with in's key and query, in's body, and the reply decoded as Out.
// Every method of Client that is a row is one call.
func call[In, Out any](ctx context.Context, c *Client, op wire.Op[In, Out], in In) (Out, error) {
	var out Out
	path, body := op.Request(in)
	return out, c.do(ctx, op.Method, path, body, &out)
}
