package agent

import (
	"context"
	"log/slog"

	acp "github.com/coder/acp-go-sdk"
)

// sdkRejected is the message acp-go-sdk v0.13.0 logs, with the method as
// an attribute, when the handling of a notification fails; for
// session/update that is a notification whose params it could not decode
// or validate, so the client's SessionUpdate never saw it.
// TestGuardReleasesRejectedUpdates pins it.
const sdkRejected = "failed to handle notification"

// sdkLog is the SDK's logger. It turns each rejected session/update into
// a release of the flow, which the guard counted when it passed the line
// on without decoding its params (ADR 0059), and keeps those records out
// of the daemon's log: an agent writing malformed updates must not flood
// it (the guard used to drop them silently). Everything else goes to next.
type sdkLog struct {
	next     slog.Handler
	rejected func()
}

func (h *sdkLog) Enabled(ctx context.Context, l slog.Level) bool {
	// Rejections are counted whatever the daemon's level.
	return l >= slog.LevelError || h.next.Enabled(ctx, l)
}

func (h *sdkLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == sdkRejected {
		update := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "method" && a.Value.String() == acp.ClientMethodSessionUpdate {
				update = true
				return false
			}
			return true
		})
		if update {
			h.rejected()
			return nil
		}
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *sdkLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &sdkLog{next: h.next.WithAttrs(as), rejected: h.rejected}
}

func (h *sdkLog) WithGroup(name string) slog.Handler {
	return &sdkLog{next: h.next.WithGroup(name), rejected: h.rejected}
}
