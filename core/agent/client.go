package agent

import (
	"context"

	acp "github.com/coder/acp-go-sdk"
)

// client is kandev's side of the ACP connection. kandev advertises no file
// system or terminal capability, so agents use their own tools for those;
// the methods below refuse politely if an agent calls them anyway.
type client struct{ run *Run }

var _ acp.Client = (*client)(nil)

func (c *client) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	defer c.run.flow.release()
	c.run.handler.Update(ctx, n)
	return nil
}

// RequestPermission hands the request to the handler with a context that
// ends when kandev cancels the turn (session/cancel), the agent cancels
// the request, or the connection closes: a handler waiting on a person
// must then answer cancelled, as ACP asks of a client that cancels.
//
// The notifications the agent sent before the request are handled first
// (Run.AwaitEarlier): the request was read after them, so every one of
// them is counted by the time this runs.
func (c *client) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	ctx, done := c.run.permissionContext(ctx)
	defer done()
	c.run.AwaitEarlier(ctx)
	return c.run.handler.Permission(ctx, req), nil
}

func (c *client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}

func (c *client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}

func (c *client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}

func (c *client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}

func (c *client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}

func (c *client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}

func (c *client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}
