// Package mcpwire holds the Model Context Protocol shapes kandev speaks
// over stdio: `kandev mcp` (package mcpserve) writes them, the mock
// agent's client reads them. They are kandev's own rather than mcp-go's
// `mcp` types (ADR 0039, addendum): that package links google/jsonschema-go,
// whose package init (regexp compiles, ~0.3 ms) every kandev command paid
// whatever it ran, for a handful of structs.
//
// Only what kandev uses is here: the stdio subset of a tools-only server.
// The JSON each type writes is the bytes mcp-go's types wrote (keys in the
// same order, the same fields omitted when empty), which
// mcpserve's TestWireMatchesMCPGo checks against mcp-go itself.
package mcpwire

import (
	"encoding/json"
	"slices"
)

// JSONRPCVersion is the "jsonrpc" member of every message.
const JSONRPCVersion = "2.0"

// The methods kandev serves or sends.
const (
	MethodInitialize              = "initialize"
	MethodPing                    = "ping"
	MethodToolsList               = "tools/list"
	MethodToolsCall               = "tools/call"
	MethodNotificationInitialized = "notifications/initialized"
	MethodNotificationCancelled   = "notifications/cancelled"
	MethodNotificationProgress    = "notifications/progress"
)

// Protocol versions. The handshake (initialize) exists up to 2025-11-25;
// 2026-07-28 replaced it with the stateless protocol.
const (
	ProtocolVersion20241105 = "2024-11-05"
	ProtocolVersion20250326 = "2025-03-26"
	ProtocolVersion20250618 = "2025-06-18"
	ProtocolVersion20251125 = "2025-11-25"
	ProtocolVersion20260728 = "2026-07-28"

	// LatestLegacyProtocolVersion is the newest version with the
	// initialize handshake: the highest initialize can agree on.
	LatestLegacyProtocolVersion = ProtocolVersion20251125
)

// legacyVersions are the known versions that have the handshake.
var legacyVersions = []string{ProtocolVersion20251125, ProtocolVersion20250618, ProtocolVersion20250326, ProtocolVersion20241105}

// NegotiateLegacyVersion is the version a server answers initialize with:
// the client's when it is a known version with the handshake, else the
// latest such; a client that names none is taken to speak 2025-03-26, as
// the specification says a server should assume.
func NegotiateLegacyVersion(client string) string {
	if client == "" {
		client = ProtocolVersion20250326
	}
	if slices.Contains(legacyVersions, client) {
		return client
	}
	return LatestLegacyProtocolVersion
}

// Implementation names a client or a server.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeParams are the parameters of initialize that kandev reads. The
// name is mcp-go's, so that a decoding error reads the same ("Go struct
// field InitializeParams.protocolVersion").
type InitializeParams struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      Implementation  `json:"clientInfo"`
}

// InitializeResult answers initialize.
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// ServerCapabilities: kandev serves tools and nothing else.
type ServerCapabilities struct {
	Tools *ToolsCapability `json:"tools,omitempty"`
}

// ToolsCapability says whether the tool list may change during a session.
type ToolsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// Tool is a tool as tools/list declares it. The fields are in key order:
// mcp-go wrote a Tool through a map, so its keys came out sorted.
type Tool struct {
	Annotations ToolAnnotation  `json:"annotations"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
}

// ToolAnnotation holds a tool's behaviour hints.
type ToolAnnotation struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ListToolsResult answers tools/list.
type ListToolsResult struct {
	Tools []Tool `json:"tools"`
}

// CallToolResult answers tools/call. The fields are in key order, as for
// Tool; Content is never null on the wire.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	IsError           bool            `json:"isError,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
}

// MarshalJSON writes an empty content list as [], as mcp-go did.
func (r CallToolResult) MarshalJSON() ([]byte, error) {
	type plain CallToolResult
	if r.Content == nil {
		r.Content = []Content{}
	}
	return json.Marshal(plain(r))
}

// Content is one block of a tool result. kandev writes only text; a
// client reading another kind gets its type and no text.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// TextContent is a text block.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// RequestMeta is the _meta of a request: kandev reads its progress token.
type RequestMeta struct {
	// ProgressToken is the client's token, a string or a number (decoded
	// as float64), or nil when the client wants no progress.
	ProgressToken any
}

// UnmarshalJSON reads the token out of any object, as mcp-go did (and
// with its error for anything else).
func (m *RequestMeta) UnmarshalJSON(b []byte) error {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.ProgressToken = raw["progressToken"]
	return nil
}

// Notification is a JSON-RPC notification.
type Notification struct {
	JSONRPC string         `json:"jsonrpc"`
	Method  string         `json:"method"`
	Params  map[string]any `json:"params,omitzero"`
}

// Bool is a pointer to b, for the annotations.
func Bool(b bool) *bool { return &b }
