package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/kandev/kandev/core"
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

// keyedOptions adapts an operation that takes its key and options whose
// body is sent only when set (wire.Options).
func keyedOptions[B, Out any](fn func(context.Context, string, B) (Out, error)) func(context.Context, wire.Keyed[wire.Options[B]]) (Out, error) {
	return func(ctx context.Context, in wire.Keyed[wire.Options[B]]) (Out, error) {
		return fn(ctx, in.Key, in.In.Value)
	}
}

func writeErr(w http.ResponseWriter, err error) {
	ce := core.AsError(err)
	writeJSON(w, wire.HTTPStatus(ce.Code), wire.ErrorBody{Error: ce})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// MaxBody is the largest request body the daemon reads.
const MaxBody = 8 << 20

// decode reads a JSON body strictly. A body over MaxBody is refused as
// such, not as the truncated JSON it would otherwise look like.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return core.Errorf(core.CodeValidation, "request body is too large: the limit is %d MiB", MaxBody>>20)
		}
		return core.Errorf(core.CodeValidation, "bad request body: %v", err)
	}
	return nil
}
