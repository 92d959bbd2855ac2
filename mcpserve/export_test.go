package mcpserve

// WithMaxMessage sets the message cap (MaxMessage) for a test's bridge.
func WithMaxMessage(n int) Option { return func(o *options) { o.maxMsg = n } }
