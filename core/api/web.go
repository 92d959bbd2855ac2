package api

import (
	"context"
	"time"
)

// WebClient is the web inbox's area (docs/web.md, ADR 0079): pairing a
// browser and the devices paired. Only the operator's socket serves it;
// the inbox itself is served on its own address.
type WebClient interface {
	// WebPair makes a one-time pairing code; CodeUnavailable when the
	// web inbox is off.
	WebPair(ctx context.Context, in WebPairInput) (WebPairing, error)
	WebDevices(ctx context.Context) ([]WebDevice, error)
	// WebRevoke revokes a paired device: its credential opens nothing.
	WebRevoke(ctx context.Context, id string) (WebDevice, error)
}

// WebPairInput names the device a code is for ("" is "browser").
type WebPairInput struct {
	Name string `json:"name,omitempty"`
}

// WebPairing is a pairing code and where to use it.
type WebPairing struct {
	// Code is shown as ABCD-EFGH; it works once, until ExpiresAt.
	Code      string    `json:"code"`
	URL       string    `json:"url"`
	Name      string    `json:"name"`
	ExpiresAt time.Time `json:"expires_at"`
	// Warning is set when the inbox listens beyond loopback over plain
	// HTTP (web_allow_plain_http, ADR 0080).
	Warning string `json:"warning,omitempty"`
}

// WebDevice is a paired browser.
type WebDevice struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	PairedAt   time.Time `json:"paired_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	Revoked    bool      `json:"revoked"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
	// Actions counts the changes made from it.
	Actions int `json:"actions"`
}
