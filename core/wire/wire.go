// Package wire holds what the daemon and its clients both speak over the
// socket: the error reply, a forwarded tool call, and the compact task
// summary. It depends on core alone, so a client (kandev mcp, the TUI)
// decodes the daemon's answers without linking the engine or the store.
package wire

import (
	"encoding/json"
	"net/http"

	"github.com/kandev/kandev/core"
)

// ErrorBody is the body of every error reply.
type ErrorBody struct {
	Error *core.Error `json:"error"`
}

// HTTPStatus maps an error code to the HTTP status every reply of the
// daemon's (its API and the web inbox) gives it, once.
func HTTPStatus(code core.Code) int {
	switch code {
	case core.CodeValidation:
		return http.StatusBadRequest
	case core.CodeNotFound:
		return http.StatusNotFound
	case core.CodeForbidden:
		return http.StatusForbidden
	case core.CodeConflict:
		return http.StatusConflict
	case core.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// MCPCall is the body of a tool call forwarded by the bridge.
type MCPCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}
