package agent

import (
	"context"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Handshake is what an agent said about itself in answer to initialize.
type Handshake struct {
	ProtocolVersion int    `json:"protocol_version"`
	AgentName       string `json:"agent_name,omitempty"`
	AgentVersion    string `json:"agent_version,omitempty"`
	LoadSession     bool   `json:"load_session"`
	Resume          bool   `json:"resume"`
}

// handshakeGrace is short: the agent has no session to save.
var handshakeGrace = Grace{Cancel: time.Second, Interrupt: time.Second, Terminate: time.Second}

// Initialize starts the agent exactly as a run does (its own process group,
// spec.SessionID marking its helpers), sends initialize, waits at most
// timeout for the answer, then tears the agent and everything it started
// down. It opens no session, so it costs the agent no model call.
func Initialize(ctx context.Context, spec Spec, timeout time.Duration) (Handshake, error) {
	r, err := Start(spec, discardHandler{})
	if err != nil {
		return Handshake{}, err
	}
	defer r.Terminate(handshakeGrace)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, stop := r.cancelOnExit(ctx)
	defer stop()
	init, err := r.initialize(ctx)
	if err != nil {
		return Handshake{}, err
	}
	h := Handshake{ProtocolVersion: int(init.ProtocolVersion), LoadSession: init.AgentCapabilities.LoadSession,
		Resume: init.AgentCapabilities.SessionCapabilities.Resume != nil}
	if init.AgentInfo != nil {
		h.AgentName, h.AgentVersion = init.AgentInfo.Name, init.AgentInfo.Version
	}
	return h, nil
}

// discardHandler serves an agent that has no session: nothing it could
// send is wanted, and a permission request is refused.
type discardHandler struct{}

func (discardHandler) Update(context.Context, acp.SessionNotification) {}
func (discardHandler) Permission(context.Context, acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
}
func (discardHandler) Garbage(string) {}
func (discardHandler) Fault(string)   {}
