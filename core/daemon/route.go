package daemon

import (
	"context"
	"net/http"

	"github.com/kandev/kandev/core/wire"
)

// route serves one row of the operation table (core/wire): the route is
// the row's, and handle reads the input as the row says.
func route[In, Out any](m *http.ServeMux, op wire.Op[In, Out], fn func(context.Context, In) (Out, error)) {
	m.HandleFunc(op.Pattern(), handle(op, fn))
}

// handle adapts fn to HTTP: it reads the row's input from the request,
// calls fn, and replies with its output, or with its error in the API's
// error shape (statusOf).
func handle[In, Out any](op wire.Op[In, Out], fn func(context.Context, In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in, err := parse(op, r)
		if err != nil {
			writeErr(w, err)
			return
		}
		out, err := fn(r.Context(), in)
		reply(w, out, err)
	}
}

// parse reads a row's input from r: its path's wildcard, its query, its
// body (strictly, as decode reads every body).
func parse[In, Out any](op wire.Op[In, Out], r *http.Request) (In, error) {
	var key string
	if name := op.Wildcard(); name != "" {
		key = r.PathValue(name)
	}
	return op.Parse(key, r.URL.Query(), func(v any) error { return decode(r, v) })
}

// The adapters below fit an engine method to a row whose input is only
// its key (key), nothing (none), a key and a body (keyed), or a key and
// options (keyedOptions).

func none[Out any](fn func(context.Context) (Out, error)) func(context.Context, wire.None) (Out, error) {
	return func(ctx context.Context, _ wire.None) (Out, error) { return fn(ctx) }
}

func key[Out any](fn func(context.Context, string) (Out, error)) func(context.Context, wire.Keyed[wire.None]) (Out, error) {
	return func(ctx context.Context, in wire.Keyed[wire.None]) (Out, error) { return fn(ctx, in.Key) }
}

func keyed[B, Out any](fn func(context.Context, string, B) (Out, error)) func(context.Context, wire.Keyed[B]) (Out, error) {
	return func(ctx context.Context, in wire.Keyed[B]) (Out, error) { return fn(ctx, in.Key, in.In) }
}

func keyedOptions[B, Out any](fn func(context.Context, string, B) (Out, error)) func(context.Context, wire.Keyed[wire.Options[B]]) (Out, error) {
	return func(ctx context.Context, in wire.Keyed[wire.Options[B]]) (Out, error) {
		return fn(ctx, in.Key, in.In.Value)
	}
}
